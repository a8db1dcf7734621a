//! Schedules to first bug and schedules per second: the dst explorer
//! against shuttle 0.9.1 (`check_random` and `check_pct` with depth 3) on
//! the same programs (`src/programs.rs`, compiled against each), in one run.
//!
//! `cargo bench -p dst-example-concurrency --bench schedules [-- SEEDS]`
//! (default 20 seeds; `only=a,b` for some programs, `dst` for the
//! explorer's column alone) — see docs/benchmarks.md.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dst_executors::{Executor as _, InProcess};
use dst_fuzz::explore::{Options, explore_here};

/// The same programs on shuttle's types; a failed check panics, as
/// shuttle expects.
#[allow(dead_code)] // `run` is the binaries'
mod shuttle_ports {
    macro_rules! check {
        ($cond:expr, $msg:literal, $details:expr) => {{
            let _ = &$details;
            assert!($cond, $msg)
        }};
    }
    use shuttle::sync::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};
    use shuttle::sync::{Mutex, MutexGuard};
    use shuttle::thread::{self, JoinHandle};
    include!("../src/programs.rs");
}

/// Schedules shuttle runs on one program from one of its checks
/// (counted per execution), until the first failure or `budget`.
static EXECUTIONS: AtomicU64 = AtomicU64::new(0);

fn shuttle_to_bug(program: fn(), seed: u64, pct: bool, budget: usize) -> Option<u64> {
    use shuttle::scheduler::{PctScheduler, RandomScheduler};
    use shuttle::{Config, FailurePersistence, Runner};
    EXECUTIONS.store(0, Ordering::SeqCst);
    let mut config = Config::new();
    config.failure_persistence = FailurePersistence::None;
    config.silence_warnings = true;
    let body = move || {
        EXECUTIONS.fetch_add(1, Ordering::SeqCst);
        program();
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        if pct {
            Runner::new(PctScheduler::new_from_seed(seed, 3, budget), config).run(body);
        } else {
            Runner::new(RandomScheduler::new_from_seed(seed, budget), config).run(body);
        }
    }));
    result.is_err().then(|| EXECUTIONS.load(Ordering::SeqCst))
}

fn dst_to_bug(name: &str, seed: u64, budget: u64) -> Option<u64> {
    let dir = std::env::temp_dir().join(format!("dst-sched-{name}-{seed}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut options = Options::new(name, &dir);
    options.runs = Some(budget);
    options.time = Some(Duration::from_secs(15));
    options.seed = seed;
    options.timeout = Duration::from_secs(5);
    options.shrink_budget = 0;
    options.stop_on_finding = true;
    let owned = name.to_string();
    let subject = InProcess::new(move || dst_example_concurrency::run(&owned));
    let summary = explore_here(subject, &options).expect("campaign");
    let _ = std::fs::remove_dir_all(&dir);
    summary.findings.first().map(|f| f.executions)
}

/// Schedules per second: dst's in-process executor on random-tail inputs
/// (every strategy), failures recorded and ignored.
fn dst_rate(program: fn(), runs: u64) -> f64 {
    let mut exec = InProcess::new(program);
    let start = Instant::now();
    for seed in 1..=runs {
        exec.execute(&seed.to_le_bytes());
    }
    runs as f64 / start.elapsed().as_secs_f64()
}

/// Schedules per second of shuttle's random scheduler (restarted after
/// each failure, which ends a shuttle run).
fn shuttle_rate(program: fn(), runs: u64) -> f64 {
    let start = Instant::now();
    let mut done = 0;
    let mut seed = 1;
    while done < runs {
        let n = shuttle_to_bug(program, seed, false, (runs - done) as usize).unwrap_or(runs - done);
        done += n.max(1);
        seed += 1;
    }
    done as f64 / start.elapsed().as_secs_f64()
}

fn median(mut v: Vec<u64>) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.sort_unstable();
    v[v.len() / 2].to_string()
}

fn main() {
    let seeds: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20);
    // Shuttle's failures panic inside its threads; keep them quiet.
    std::panic::set_hook(Box::new(|_| {}));
    if std::env::args().any(|a| a == "hits") {
        // Which share of random-tail runs fails, by strategy.
        for (name, program) in dst_example_concurrency::PROGRAMS {
            let mut exec = InProcess::new(*program);
            let mut runs = [0u32; 4];
            let mut hits = [0u32; 4];
            for seed in 1..=2000u64 {
                let record = dst_kernel::Executor::run(&mut exec, &seed.to_le_bytes());
                let strategy = record
                    .decisions
                    .iter()
                    .find(|d| d.kind == dst::decision::Kind::Strategy as u8)
                    .map_or(0, |d| (d.value % 4) as usize);
                runs[strategy] += 1;
                hits[strategy] += u32::from(record.signature().is_some());
            }
            println!(
                "{name:<12} direct {}/{}  pct {}/{}  pos {}/{}  sites {}/{}",
                hits[0], runs[0], hits[1], runs[1], hits[2], runs[2], hits[3], runs[3]
            );
        }
        return;
    }
    if std::env::args().any(|a| a == "profile") {
        // dst's side alone, longer (for a profiler).
        for (name, program) in dst_example_concurrency::PROGRAMS {
            println!("{name:<12} dst {:>8.0}/s", dst_rate(*program, 20_000));
        }
        return;
    }
    if std::env::args().any(|a| a == "rates") {
        // Schedules per second only.
        for (i, (name, program)) in dst_example_concurrency::PROGRAMS.iter().enumerate() {
            let (_, shuttle_program) = shuttle_ports::PROGRAMS[i];
            let (d, s) = (
                dst_rate(*program, 2000),
                shuttle_rate(shuttle_program, 2000),
            );
            println!(
                "{name:<12} dst {d:>8.0}/s  shuttle {s:>8.0}/s  ratio {:.2}",
                d / s
            );
        }
        return;
    }
    const BUDGET: u64 = 20_000;
    println!(
        "schedules to first bug, median over {seeds} seeds (found/seeds); budget {BUDGET} (dst: and 15 s); schedules/s"
    );
    println!(
        "{:<12} {:>14} {:>14} {:>14} {:>10} {:>10} {:>7}",
        "program", "dst explorer", "shuttle random", "shuttle pct3", "dst/s", "shuttle/s", "ratio"
    );
    // `only=a,b`: these programs; `dst`: the explorer's column only.
    let only: Option<Vec<String>> = std::env::args().find_map(|a| {
        a.strip_prefix("only=")
            .map(|v| v.split(',').map(String::from).collect())
    });
    let dst_only = std::env::args().any(|a| a == "dst");
    for (i, (name, program)) in dst_example_concurrency::PROGRAMS.iter().enumerate() {
        if only.as_ref().is_some_and(|o| !o.iter().any(|n| n == name)) {
            continue;
        }
        let (_, shuttle_program) = shuttle_ports::PROGRAMS[i];
        let mut dst = Vec::new();
        let mut random = Vec::new();
        let mut pct = Vec::new();
        for seed in 1..=seeds {
            dst.extend(dst_to_bug(name, seed, BUDGET));
            if dst_only {
                continue;
            }
            random.extend(shuttle_to_bug(
                shuttle_program,
                seed,
                false,
                BUDGET as usize,
            ));
            pct.extend(shuttle_to_bug(shuttle_program, seed, true, BUDGET as usize));
        }
        let runs = if name.ends_with("_50") || name.ends_with("_20") || name.ends_with("_100") {
            500
        } else {
            3000
        };
        let (dst_rate, shuttle_rate) = if dst_only {
            (0.0, f64::NAN)
        } else {
            (
                dst_rate(*program, runs),
                shuttle_rate(shuttle_program, runs),
            )
        };
        let cell = |v: &Vec<u64>| format!("{} ({}/{seeds})", median(v.clone()), v.len());
        println!(
            "{:<12} {:>14} {:>14} {:>14} {:>10.0} {:>10.0} {:>7.2}",
            name,
            cell(&dst),
            cell(&random),
            cell(&pct),
            dst_rate,
            shuttle_rate,
            dst_rate / shuttle_rate
        );
    }
}
