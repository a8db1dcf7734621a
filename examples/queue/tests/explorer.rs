//! The explorer finds the queue's lost element; random runs almost never do.

#[path = "../../common/explorer.rs"]
mod explorer;

use dst_executors::{Executor, InProcess};

#[test]
fn the_explorer_finds_the_lost_element() {
    let campaign = explorer::Campaign::run(
        env!("CARGO_BIN_EXE_queue"),
        "queue",
        &["--runs", "300000", "--seed", "1", "--stop-on-finding"],
    );
    let message = "the queue holds every element pushed and not popped";
    let record = explorer::check_finding(&campaign, message, 120);
    assert_eq!(
        record["details"]["model"].as_u64().unwrap(),
        record["details"]["queue"].as_u64().unwrap() + 1
    );
    assert_eq!(
        campaign.status_of("the queue shrinks with wrapped contents"),
        "passing"
    );
}

#[test]
fn random_runs_rarely_hit_it() {
    let mut exec = InProcess::new(|| dst_example_queue::simulate(100));
    let failing = (1..=3000u64)
        .filter(|seed| exec.run(&seed.to_le_bytes()).signature().is_some())
        .count();
    assert!(failing <= 3, "{failing} of 3000 random runs failed");
}
