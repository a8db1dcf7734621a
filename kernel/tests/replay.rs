//! Replay and the determinism check.

use dst_executors::{InProcess, Runner};
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
