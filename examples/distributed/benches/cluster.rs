//! The replicated store under simulation: simulated runs per second, the
//! executions and seconds the explorer needs to find each seeded bug, and
//! a long campaign on the correct store (which must find nothing).
//!
//! `cargo bench -p dst-example-distributed --bench cluster [-- SEEDS [LONG_RUNS]]`
//! (defaults: 5 explorer seeds per bug, 100,000 runs of the correct store)
//! — see docs/benchmarks.md.

use std::time::Instant;

use dst_example_distributed::{Bug, explore, simulate};
use dst_executors::{Executor as _, InProcess};

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let seeds: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(5);
    let long_runs: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);

    // Simulated runs per second: random-tail inputs (every fault on), the
    // correct store, in-process.
    let mut exec = InProcess::new(|| simulate(Bug::None));
    let start = Instant::now();
    let n = 2_000u64;
    for seed in 1..=n {
        exec.execute(&seed.to_le_bytes());
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    println!("simulated runs per second (correct store, random faults): {rate:.0}");

    println!("\n| bug | found | median executions | median seconds | property |");
    println!("|---|---|---|---|---|");
    for bug in ["vote", "commit", "stale_read", "retry"] {
        let mut executions = Vec::new();
        let mut seconds = Vec::new();
        let mut property = String::new();
        for seed in 1..=seeds {
            if let (Some(found), _, _) = explore(bug, seed, 100_000, true) {
                executions.push(found.executions as f64);
                seconds.push(found.seconds);
                property = found.property;
            }
        }
        let found = executions.len();
        let (e, s) = if found > 0 {
            (
                format!("{:.0}", median(executions)),
                format!("{:.1}", median(seconds)),
            )
        } else {
            ("-".into(), "-".into())
        };
        println!("| {bug} | {found}/{seeds} | {e} | {s} | {property} |");
    }

    let (finding, executions, seconds) = explore("none", 1, long_runs, false);
    println!(
        "\ncorrect store: {executions} executions in {seconds:.0} s, {}",
        match finding {
            None => "no finding".to_string(),
            Some(found) => format!(
                "FINDING at execution {}: {}",
                found.executions, found.property
            ),
        }
    );
}
