//! Executions and seconds until each example's bug is found, median over
//! explorer seeds 1 to 5 (uninstrumented build: decision and property
//! guidance only); `DST_SEEDS=N` takes seeds 1 to N.
//!
//! `cargo bench -p dst-fuzz --bench to_bug` — see docs/benchmarks.md.

use std::time::Duration;

use dst_executors::InProcess;
use dst_fuzz::explore::{Options, explore_here};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn to_bug<F: FnMut() + 'static>(name: &str, make: impl Fn() -> F) {
    let mut executions = Vec::new();
    let mut seconds = Vec::new();
    let mut missed = 0;
    let seeds: u64 = std::env::var("DST_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    for seed in 1..=seeds {
        let dir =
            std::env::temp_dir().join(format!("dst-to-bug-{name}-{seed}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut options = Options::new(name, &dir);
        options.runs = Some(5_000_000);
        options.time = Some(Duration::from_secs(120));
        options.seed = seed;
        options.timeout = Duration::from_secs(1);
        options.shrink_budget = 5000;
        options.stop_on_finding = true;
        let summary = explore_here(InProcess::new(make()), &options).unwrap();
        match summary.findings.first() {
            Some(f) => {
                executions.push(f.executions as f64);
                seconds.push(f.seconds);
            }
            None => missed += 1,
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    if executions.is_empty() {
        println!("{name:<10} not found by any of {seeds} seeds");
    } else {
        println!(
            "{name:<10} {:>12.0} {:>10.3} {:>8}",
            median(executions),
            median(seconds),
            format!("{}/{seeds}", seeds - missed)
        );
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    println!(
        "{:<10} {:>12} {:>10} {:>8}",
        "example", "executions", "seconds", "found"
    );
    to_bug("bank", || {
        || {
            dst_example_bank::simulate(12);
        }
    });
    to_bug("queue", || || dst_example_queue::simulate(100));
    to_bug("protocol", || {
        || {
            dst_example_protocol::simulate();
        }
    });
}
