//! The explorer finds each seeded bug of the replicated store within a
//! fixed budget (fixed explorer seeds), and the correct store passes the same
//! budget; the finding's run replays exactly.

use dst_example_distributed::{Bug, explore, simulate};
use dst_executors::{Executor, InProcess};

fn finds(bug: &'static str, runs: u64, seed: u64, message: &str) {
    let (found, _, _) = explore(bug, seed, runs, true);
    let found = found.unwrap_or_else(|| panic!("{bug}: no finding in {runs} runs"));
    let (executions, signature, input) = (found.executions, found.property, found.input);
    println!("{bug}: found after {executions} executions: {signature}");
    assert!(signature.contains(message), "{bug}: {signature}");
    // The finding's input replays to the same failure, run after run.
    let mut exec = InProcess::new(move || simulate(Bug::from_name(bug)));
    let first = exec.run(&input);
    assert_eq!(
        first.signature().map(|s| s.to_string()),
        Some(signature.clone())
    );
    let again = exec.run(&input);
    assert_eq!(again.trace_hash, first.trace_hash, "{bug}: replay is exact");
}

#[test]
fn the_nominal_run_of_the_correct_store_passes() {
    let mut exec = InProcess::new(|| simulate(Bug::None));
    let run = exec.run(&[]);
    assert_eq!(run.signature(), None);
    for seed in 1..=30u64 {
        let run = exec.run(&seed.to_le_bytes());
        assert_eq!(run.signature(), None, "seed {seed}");
    }
}

#[test]
fn a_vote_not_persisted_elects_two_leaders_in_one_term() {
    finds("vote", 20_000, 1, "at most one leader per term");
}

#[test]
fn committing_an_earlier_terms_entry_by_counting_loses_it() {
    // Explorer seed 1: this bug needs a leader to lose a term's entry
    // unreplicated, another to win, and the first to win again. Seed 1
    // finds it in 737 executions, seeds 2 and 7 not in 20,000 (seeds 1 to 8
    // of the release explorer; docs/benchmarks.md has medians).
    finds(
        "commit",
        20_000,
        1,
        "no server holds a newer entry where one is committed",
    );
}

#[test]
fn a_leader_reading_without_confirming_serves_stale_values() {
    finds("stale_read", 20_000, 1, "linearizable");
}

#[test]
fn a_retry_applied_twice_breaks_linearizability() {
    finds("retry", 20_000, 1, "linearizable");
}
