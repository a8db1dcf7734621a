//! Replay and the determinism check.

use dst_executors::{Executor, InProcess};
use dst_kernel::{Determinism, check_determinism};

fn well_behaved() {
    let n = dst::random::below(10);
    for _ in 0..n {
        dst::random::bool();
    }
}

/// Reads the wall clock: the number of decisions depends on the time.
fn reads_the_clock() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    for _ in 0..(3 + nanos % 997) {
        dst::random::bool();
    }
}

#[test]
fn a_deterministic_target_replays_identically() {
    let mut exec = InProcess::new(well_behaved);
    for seed in 1..20u64 {
        let (first, verdict) = check_determinism(&mut exec, &seed.to_le_bytes(), 5);
        assert_eq!(verdict, Determinism::Stable { runs: 5 });
        assert_eq!(exec.run(&seed.to_le_bytes()), first);
    }
}

#[test]
fn the_determinism_check_catches_a_clock_read() {
    let mut exec = InProcess::new(reads_the_clock);
    let (first, verdict) = check_determinism(&mut exec, &[], 20);
    let Determinism::Diverged {
        divergence: Some(divergence),
        ..
    } = verdict
    else {
        panic!("expected a divergence, got {verdict:?}");
    };
    // All decisions are nominal `false`: the traces differ in length, so the
    // first divergence is where the shorter run stopped.
    assert!(divergence.index >= 3);
    assert!(divergence.expected.is_none() || divergence.found.is_none());
    assert!(divergence.index <= first.decision_count);
    assert!(
        divergence
            .to_string()
            .contains(&format!("decision #{}", divergence.index))
    );
}

/// Fails "odd" on every other run of this process, whatever the input: a
/// flaky target.
fn fails_every_other_run() {
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let odd = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2 == 1;
    dst::random::bool();
    dst::assert_always!(!odd, "odd");
}

#[test]
fn confirming_counts_every_replay_that_fails_the_expected_way() {
    use dst_kernel::{Signature, confirm};
    let odd = Signature::Property {
        message: "odd".into(),
    };
    let mut exec = InProcess::new(fails_every_other_run);
    // Replays 1..=5 of this process are runs 0..=4: runs 1 and 3 fail.
    let confirmation = confirm(&mut exec, &[], Some(&odd), 5);
    assert_eq!(confirmation.signature, Some(odd.clone()));
    assert_eq!((confirmation.reproduced, confirmation.runs), (2, 5));
    assert_eq!(confirmation.record.signature(), Some(odd.clone()));
    assert!(!confirmation.is_stable());
    assert!(matches!(
        confirmation.verdict,
        Determinism::Diverged {
            run: 2,
            outcome_changed: true,
            ..
        }
    ));

    // Expecting nothing in particular: the first replay's failure, if any.
    // Runs 5 and 7 fail, run 6 passes.
    let confirmation = confirm(&mut exec, &[], None, 3);
    assert_eq!(confirmation.signature, Some(odd.clone()));
    assert_eq!(confirmation.reproduced, 2);
    // Runs 8 (passes, so nothing to confirm) and 9.
    let confirmation = confirm(&mut exec, &[], None, 2);
    assert_eq!((confirmation.signature, confirmation.reproduced), (None, 0));

    // A failure a well-behaved target never shows is not confirmed.
    let mut exec = InProcess::new(well_behaved);
    let confirmation = confirm(&mut exec, &[], Some(&odd), 5);
    assert_eq!(confirmation.reproduced, 0);
    assert_eq!(confirmation.record.signature(), None);
    assert_eq!(confirmation.verdict, Determinism::Stable { runs: 5 });
}
