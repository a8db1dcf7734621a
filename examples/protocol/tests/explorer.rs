//! The explorer finds the protocol's lost writes; random runs rarely do.

#[path = "../../common/explorer.rs"]
mod explorer;

use dst_executors::{Executor, InProcess};

#[test]
fn the_explorer_finds_the_lost_writes() {
    let campaign = explorer::Campaign::run(
        env!("CARGO_BIN_EXE_protocol"),
        "protocol",
        &["--runs", "300000", "--seed", "1", "--stop-on-finding"],
    );
    let message = "a commit keeps every acknowledged write";
    let record = explorer::check_finding(&campaign, message, 40);
    let faults = record["faults_fired"].as_array().unwrap();
    assert!(faults.iter().any(|f| f == "network duplicates a message"));
    assert!(record["details"]["committed"].as_array().unwrap().len() < 3);
}

#[test]
fn random_runs_rarely_hit_it() {
    let mut exec = InProcess::new(|| {
        dst_example_protocol::simulate();
    });
    let failing = (1..=3000u64)
        .filter(|seed| exec.run(&seed.to_le_bytes()).signature().is_some())
        .count();
    assert!(
        failing <= 30,
        "{failing} of 3000 random runs failed (under 1% expected)"
    );
}
