//! Executions per second of the explorer on a trivial target, side by side
//! in one run with a bare LibAFL fuzzer over the same closure.
//!
//! `cargo bench -p dst-fuzz --bench throughput` — see docs/benchmarks.md.
//! Each configuration runs for the same number of executions; the table
//! gives exec/s and the ratio to the best bare LibAFL configuration.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use dst_executors::InProcess;
use dst_fuzz::explore::{Options, explore_here};
use libafl::corpus::InMemoryCorpus;
use libafl::events::SimpleEventManager;
use libafl::executors::ExitKind;
use libafl::executors::hooks::inprocess::HasTimeout;
use libafl::executors::hooks::timer::TimerStruct;
use libafl::executors::inprocess::{HasInProcessHooks, InProcessExecutor};
use libafl::feedbacks::{CrashFeedback, MaxMapFeedback};
use libafl::fuzzer::{Evaluator, Fuzzer, StdFuzzer};
use libafl::inputs::BytesInput;
use libafl::monitors::NopMonitor;
use libafl::mutators::{HavocScheduledMutator, havoc_mutations};
use libafl::observers::{HitcountsMapObserver, StdMapObserver};
use libafl::schedulers::QueueScheduler;
use libafl::stages::StdMutationalStage;
use libafl::state::{HasExecutions, StdState};
use libafl_bolts::rands::StdRand;
use libafl_bolts::tuples::tuple_list;

const EXECUTIONS: u64 = 2_000_000;

/// The branchy closure over 16 bytes, shared by both fuzzers.
#[inline(never)]
fn branchy(buf: &[u8; 16], mut signal: impl FnMut(usize)) -> u32 {
    let mut acc = 0u32;
    for (i, &b) in buf.iter().enumerate() {
        if b > 0x80 {
            signal(i);
            acc = acc.wrapping_add(u32::from(b));
        } else if b == 0x10 {
            signal(16 + i);
            acc ^= 0x55;
        }
    }
    acc
}

fn bare_libafl(map_size: usize, batch_timer: bool) -> f64 {
    let map: &'static mut [u8] = Box::leak(vec![0u8; map_size].into_boxed_slice());
    let map_ptr = map.as_mut_ptr();
    let mut harness = |input: &BytesInput| {
        let bytes: &Vec<u8> = input.as_ref();
        let mut buf = [0u8; 16];
        let n = bytes.len().min(16);
        buf[..n].copy_from_slice(&bytes[..n]);
        let acc = branchy(&buf, |i| {
            // SAFETY: `i < 32 <= map_size`; the map is leaked, so always valid.
            unsafe { *map_ptr.add(i) = 1 };
        });
        black_box(acc);
        ExitKind::Ok
    };
    // SAFETY: the map is leaked and outlives the observer.
    let observer = HitcountsMapObserver::new(unsafe {
        StdMapObserver::from_mut_ptr("map", map_ptr, map_size)
    });
    let mut feedback = MaxMapFeedback::new(&observer);
    let mut objective = CrashFeedback::new();
    let mut state = StdState::new(
        StdRand::with_seed(1),
        InMemoryCorpus::<BytesInput>::new(),
        InMemoryCorpus::new(),
        &mut feedback,
        &mut objective,
    )
    .unwrap();
    let mut mgr = SimpleEventManager::new(NopMonitor::new());
    let mut fuzzer = StdFuzzer::new(QueueScheduler::new(), feedback, objective);
    let mut executor = InProcessExecutor::builder()
        .harness(&mut harness)
        .observers(tuple_list!(observer))
        .timeout(Duration::from_secs(1))
        .fuzzer(&mut fuzzer)
        .state(&mut state)
        .event_mgr(&mut mgr)
        .build()
        .unwrap();
    if batch_timer {
        // The timer armed once and checked per run, as dst's explorer
        // arms it for in-process targets.
        *executor.inprocess_hooks_mut().timer_mut() =
            TimerStruct::batch_mode(Duration::from_secs(1));
    }
    fuzzer
        .add_input(
            &mut state,
            &mut executor,
            &mut mgr,
            BytesInput::new(vec![0; 16]),
        )
        .unwrap();
    let mut stages = tuple_list!(StdMutationalStage::new(HavocScheduledMutator::new(
        havoc_mutations()
    )));
    let start = Instant::now();
    while *state.executions() < EXECUTIONS {
        fuzzer
            .fuzz_one(&mut stages, &mut executor, &mut state, &mut mgr)
            .unwrap();
    }
    *state.executions() as f64 / start.elapsed().as_secs_f64()
}

fn dst_explorer(dir: &Path) -> f64 {
    let target = || {
        let mut buf = [0u8; 16];
        dst::random::fill(&mut buf);
        black_box(branchy(&buf, |_| {}));
    };
    let mut options = Options::new("throughput", dir);
    options.runs = Some(EXECUTIONS);
    options.seed = 1;
    options.timeout = Duration::from_secs(1);
    options.shrink_budget = 1000;
    let summary = explore_here(InProcess::new(target), &options).unwrap();
    summary.executions as f64 / summary.seconds
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would pass nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("dst-throughput-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // DST_BENCH_ONLY=dst (or =bare) runs one side, for profiling.
    let only = std::env::var("DST_BENCH_ONLY").unwrap_or_default();
    let mut rows = Vec::new();
    if !only.contains("dst") {
        rows.push(("bare LibAFL, 64 KiB map", bare_libafl(1 << 16, false)));
        rows.push(("bare LibAFL, 4 KiB map", bare_libafl(1 << 12, false)));
        rows.push((
            "bare LibAFL, 4 KiB map, batch timer",
            bare_libafl(1 << 12, true),
        ));
    }
    if !only.contains("bare") {
        rows.push(("dst explorer, in-process bench build", dst_explorer(&dir)));
    }
    let best_bare = rows
        .iter()
        .filter(|r| r.0.starts_with("bare"))
        .map(|r| r.1)
        .fold(f64::NAN, f64::max);
    println!(
        "{:<36} {:>12} {:>10}",
        "configuration", "exec/s", "vs best bare"
    );
    for (name, rate) in rows {
        println!("{name:<36} {rate:>12.0} {:>9.2}x", rate / best_bare);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
