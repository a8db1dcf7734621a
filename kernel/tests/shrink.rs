//! The shrinker and prefix bisection on real in-process targets.

use dst::decision::SEED_BYTES;
use dst_executors::{Executor, InProcess};
use dst_kernel::{Signature, bisect_prefix, shrink};

/// Fails only when three specific decisions among twenty line up.
fn planted() {
    let d: Vec<u64> = (0..20).map(|_| dst::random::below(256)).collect();
    let armed = d[3] == 7 && d[10] == 200 && d[15] >= 100;
    dst::assert_always!(!armed, "the planted bug stays hidden", &d);
}

fn planted_signature() -> Signature {
    Signature::Property {
        message: "the planted bug stays hidden".to_string(),
    }
}

/// A noisy failing input: a random seed and junk in every other decision.
fn noisy_failing_input() -> Vec<u8> {
    let mut input = 0x5EED_u64.to_le_bytes().to_vec();
    input.extend((0..40u8).map(|i| i.wrapping_mul(37).wrapping_add(11)));
    input[SEED_BYTES + 3] = 7;
    input[SEED_BYTES + 10] = 200;
    input[SEED_BYTES + 15] = 251;
    input
}

#[test]
fn shrinks_a_planted_failure_to_exactly_its_three_decisions() {
    let mut exec = InProcess::new(planted);
    let input = noisy_failing_input();
    assert_eq!(exec.run(&input).signature(), Some(planted_signature()));

    let shrunk = shrink(&mut exec, &input, &planted_signature(), 5_000).expect("reproduces");
    let mut expected = vec![0u8; SEED_BYTES + 16];
    expected[SEED_BYTES + 3] = 7;
    expected[SEED_BYTES + 10] = 200;
    expected[SEED_BYTES + 15] = 100;
    assert_eq!(shrunk.input, expected, "after {} runs", shrunk.runs);
    assert!(shrunk.runs < 5_000);
    assert_eq!(shrunk.record.signature(), Some(planted_signature()));
}

/// Fails when decision 20 of 30 is 5: a random tail hits it 1 time in 8.
fn twentieth() {
    let d: Vec<u64> = (0..30).map(|_| dst::random::below(8)).collect();
    dst::assert_always!(d[20] != 5, "decision 20 is never 5");
}

#[test]
fn a_seed_only_failure_is_made_explicit() {
    let mut exec = InProcess::new(twentieth);
    let signature = Signature::Property {
        message: "decision 20 is never 5".into(),
    };
    let seed = (1..1000u64)
        .find(|s| exec.run(&s.to_le_bytes()).signature().as_ref() == Some(&signature))
        .expect("one seed in eight fails");
    let shrunk = shrink(&mut exec, &seed.to_le_bytes(), &signature, 5_000).unwrap();
    let mut expected = vec![0u8; SEED_BYTES + 21];
    expected[SEED_BYTES + 20] = 5;
    assert_eq!(
        shrunk.input, expected,
        "seed {seed}: zero seed, one explicit decision"
    );
}

#[test]
fn passing_inputs_are_not_shrunk() {
    let mut exec = InProcess::new(planted);
    assert!(shrink(&mut exec, &[], &planted_signature(), 100).is_none());
}

/// Fails when any of the first 30 decisions is 255, and then takes 100 more.
fn late_tail() {
    let early: Vec<u64> = (0..30).map(|_| dst::random::below(256)).collect();
    for _ in 0..100 {
        dst::random::bool();
    }
    dst::assert_always!(!early.contains(&255), "no early 255");
}

#[test]
fn prefix_bisection_finds_the_shortest_failing_prefix() {
    let mut exec = InProcess::new(late_tail);
    let mut input = vec![0u8; SEED_BYTES];
    input.extend(std::iter::repeat_n(1u8, 20));
    input.push(255);
    input.extend(std::iter::repeat_n(3u8, 50));
    let signature = Signature::Property {
        message: "no early 255".into(),
    };
    let (prefix, len) = bisect_prefix(&mut exec, &input, &signature).expect("fails");
    assert_eq!(len, 21);
    assert_eq!(prefix.len(), SEED_BYTES + 21);
    assert_eq!(prefix[SEED_BYTES + 20], 255);
    assert_eq!(exec.run(&prefix).signature(), Some(signature));
}
