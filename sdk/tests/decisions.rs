//! Each decision function's nominal value, encoding and range.

use std::cell::RefCell;

use dst::decision::{FAULT_THRESHOLD, tail_bytes};
use dst_executors::{Executor, InProcess};
use rand_core::Rng as _;

/// What one run of `probe` returned.
#[derive(Debug, Default, Clone, PartialEq)]
struct Drawn {
    u64: u64,
    below10: u64,
    below1000: u64,
    bool: bool,
    choose: Option<u32>,
    fill: [u8; 3],
    fault: bool,
    rng32: u32,
    rng64: u64,
    below0: u64,
    below1: u64,
    choose_empty: Option<u32>,
}

fn probe() -> Drawn {
    let mut rng = dst::random::Rng;
    let mut fill = [0xAA; 3];
    let mut d = Drawn {
        u64: dst::random::u64(),
        below10: dst::random::below(10),
        below1000: dst::random::below(1000),
        bool: dst::random::bool(),
        choose: dst::random::choose(&[7u32, 8, 9]).copied(),
        ..Drawn::default()
    };
    dst::random::fill(&mut fill);
    d.fill = fill;
    d.fault = dst::fault!("probe fault");
    d.rng32 = rng.next_u32();
    d.rng64 = rng.next_u64();
    d.below0 = dst::random::below(0);
    d.below1 = dst::random::below(1);
    d.choose_empty = dst::random::choose::<u32>(&[]).copied();
    d
}

/// Bytes `probe` consumes: 8 + 1 + 2 + 1 + 1 + 3 + 1 + 4 + 8.
const PROBE_BYTES: usize = 29;

fn run(input: &[u8]) -> (Drawn, dst_kernel::RunRecord) {
    let out = RefCell::new(Drawn::default());
    let mut exec = InProcess::new(|| *out.borrow_mut() = probe());
    let record = exec.run(input);
    drop(exec);
    (out.into_inner(), record)
}

#[test]
fn empty_and_all_zero_inputs_are_nominal() {
    let nominal = Drawn {
        choose: Some(7),
        ..Drawn::default()
    };
    for input in [vec![], vec![0u8; 3], vec![0u8; 8], vec![0u8; 100]] {
        let (drawn, record) = run(&input);
        assert_eq!(drawn, nominal, "input of {} zero bytes", input.len());
        assert_eq!(record.consumed, PROBE_BYTES as u64);
        assert_eq!(
            record.decision_count, 9,
            "below(0), below(1) and choose(&[]) take none"
        );
    }
}

#[test]
fn explicit_bytes_decode_big_endian_and_in_order() {
    let mut input = vec![0u8; 8];
    input.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0x01, 0x02]); // u64
    input.push(13); // below(10): 13 % 10
    input.extend_from_slice(&[0x03, 0xE9]); // below(1000): 1001 % 1000
    input.push(0x03); // bool: low bit
    input.push(2); // choose: third
    input.extend_from_slice(&[1, 2, 3]); // fill
    input.push(FAULT_THRESHOLD); // fault fires
    input.extend_from_slice(&[0, 0, 1, 0]); // next_u32
    let (drawn, record) = run(&input);
    assert_eq!(drawn.u64, 0x0102);
    assert_eq!(drawn.below10, 3);
    assert_eq!(drawn.below1000, 1);
    assert!(drawn.bool);
    assert_eq!(drawn.choose, Some(9));
    assert_eq!(drawn.fill, [1, 2, 3]);
    assert!(drawn.fault);
    assert_eq!(drawn.rng32, 256);
    assert_eq!(
        drawn.rng64, 0,
        "explicit bytes ran out, seed is zero: nominal tail"
    );
    assert_eq!(record.decisions[0].offset, 0);
    assert_eq!(record.decisions[1].offset, 8);
    assert_eq!(record.decisions[1].width, 1);

    let mut below_threshold = input.clone();
    below_threshold[8 + 16] = FAULT_THRESHOLD - 1;
    assert!(!run(&below_threshold).0.fault);
}

#[test]
fn a_seeded_tail_continues_the_stream() {
    let seed: u64 = 0xDEC1_5105;
    let mut input = seed.to_le_bytes().to_vec();
    input.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 9]);
    let (drawn, record) = run(&input);
    assert_eq!(drawn.u64, 9);
    let tail = tail_bytes(seed, PROBE_BYTES - 8);
    assert_eq!(drawn.below10, u64::from(tail[0]) % 10);
    assert_eq!(
        drawn.below1000,
        (u64::from(tail[1]) << 8 | u64::from(tail[2])) % 1000
    );
    assert_eq!(record.consumed, PROBE_BYTES as u64);
    // The same input gives the same run.
    assert_eq!(run(&input).1.trace_hash, record.trace_hash);
}

#[test]
fn random_tails_cover_each_range() {
    let mut below = [0u32; 10];
    let (mut trues, mut faults, mut runs) = (0, 0, 0);
    let mut choices = std::collections::BTreeSet::new();
    for seed in 1..=800u64 {
        let (d, _) = run(&seed.to_le_bytes());
        assert!(d.below10 < 10 && d.below1000 < 1000);
        below[d.below10 as usize] += 1;
        trues += u32::from(d.bool);
        faults += u32::from(d.fault);
        choices.insert(d.choose.expect("non-empty slice"));
        runs += 1;
    }
    assert!(
        below.iter().all(|&n| n > 40),
        "below(10) is roughly uniform: {below:?}"
    );
    assert!(
        (300..500).contains(&trues),
        "bool is about fair: {trues}/{runs}"
    );
    assert!(
        (20..90).contains(&faults),
        "faults fire about 1/16 of the time: {faults}/{runs}"
    );
    assert_eq!(choices.len(), 3);
}

#[test]
fn rng_is_a_rand_core_rng() {
    fn takes_rng_core(mut rng: impl rand_core::Rng) -> u64 {
        rng.next_u64()
    }
    let value = RefCell::new(1);
    let mut exec = InProcess::new(|| *value.borrow_mut() = takes_rng_core(dst::random::Rng));
    exec.run(&[]);
    assert_eq!(*value.borrow(), 0);
}

#[test]
fn steps_codes_count_up_and_fit_any_length() {
    use dst::decision::{steps_code, steps_of};
    let counts: Vec<u64> = (0..=255u8).map(steps_of).collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    assert_eq!(
        (counts[0], counts[127]),
        (1, 128),
        "short runs count exactly"
    );
    for steps in [1u64, 2, 20, 127, 128, 129, 1_000, 31_744] {
        let fitted = steps_of(steps_code(steps));
        assert!(
            fitted >= steps && fitted <= steps + steps / 16 + 1,
            "{steps} -> {fitted}"
        );
    }
    assert_eq!(steps_code(1 << 40), 255, "longer runs take the largest");
}

#[test]
fn a_tail_is_the_same_whether_its_first_block_was_cached_or_not() {
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};
    for seed in [1u64, 7, 1 << 40, u64::MAX] {
        let mut reference = vec![0u8; 300];
        ChaCha8Rng::seed_from_u64(seed).fill_bytes(&mut reference);
        // The first call fills the cache, the second reads it, the third
        // follows another seed's.
        let cold = dst::decision::tail_bytes(seed, 300);
        let warm = dst::decision::tail_bytes(seed, 300);
        dst::decision::tail_bytes(seed ^ 1, 10);
        let short = dst::decision::tail_bytes(seed, 65);
        assert_eq!(cold, reference, "seed {seed}");
        assert_eq!(warm, reference, "seed {seed}");
        assert_eq!(short[..], reference[..65], "seed {seed}");
    }
}
