//! The explorer finds the bank's double credit; random runs almost never do.

#[path = "../../common/explorer.rs"]
mod explorer;

use dst_executors::{Executor, InProcess};

#[test]
fn the_explorer_finds_the_double_credit() {
    let campaign = explorer::Campaign::run(
        env!("CARGO_BIN_EXE_bank"),
        "bank",
        &["--runs", "300000", "--seed", "3", "--stop-on-finding"],
    );
    let record = explorer::check_finding(&campaign, "money is conserved", 48);
    let faults = record["faults_fired"].as_array().unwrap();
    assert!(faults.iter().any(|f| f == "crash between debit and credit"));
    assert!(faults.iter().any(|f| f == "client retries after timeout"));
    assert!(record["details"]["total"].as_u64().unwrap() > 400);
    assert_eq!(
        campaign.status_of("recovery from a crash mid-transfer"),
        "passing"
    );
    // The bank has no controlled threads: the SDK's thread properties are
    // not its own, and are not listed.
    let properties = campaign.properties();
    assert!(properties.contains(&"money is conserved".to_string()));
    assert!(
        properties.iter().all(|p| !p.starts_with("dst: ")),
        "{properties:?}"
    );
}

#[test]
fn random_runs_rarely_hit_it() {
    let mut exec = InProcess::new(|| {
        dst_example_bank::simulate(12);
    });
    let failing = (1..=3000u64)
        .filter(|seed| exec.run(&seed.to_le_bytes()).signature().is_some())
        .count();
    assert!(failing <= 3, "{failing} of 3000 random runs failed");
}
