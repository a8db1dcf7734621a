//! Guest executors own their run protocol (`dst::protocol::Recorder`): a
//! wasm executor and an emulator executor run at once, in two threads of
//! one process, each to its own finding, while the native SDK is attached
//! to an in-process executor's region that is in the middle of a run. Were
//! the guest levels still writing through the SDK's one attached region
//! (behind its process-wide lock), the threads would wait for the
//! in-process run that waits for them; were they writing into it, that
//! run's region would hold their decisions.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use dst_executors::riscv::executor::Emulator;
use dst_executors::wasm::{Options, Wasm};
use dst_executors::{End, Executor, InProcess, RunRecord};
use dst_kernel::finding::{self, Found, Pipeline, Processed};

mod common;
use common::input;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// examples/riscv/counter.c as a static riscv64 program; `None` (saying
/// so) without the cross compiler.
fn counter() -> Option<PathBuf> {
    let dir = std::env::temp_dir().join(format!("dst-levels-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("counter");
    let built = Command::new("riscv64-linux-gnu-gcc")
        .args(["-O1", "-g", "-static", "-pthread"])
        .arg(root().join("examples/riscv/counter.c"))
        .arg("-o")
        .arg(&program)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("skipped: riscv64-linux-gnu-gcc is not installed");
        return None;
    }
    Some(program)
}

fn lease() -> Wasm {
    Wasm::load(&root().join("examples/wasm/lease.wat"), Options::default()).unwrap()
}

/// Runs inputs of seeds 1.. until one fails, turns it into a finding in
/// `dir` through the kernel's pipeline (confirmed, shrunk, written), and
/// returns the finding's shrunk input with its record.
fn to_finding(exec: &mut dyn Executor, dir: &Path, seeds: u64) -> (Vec<u8>, RunRecord) {
    let (executions, failing) = (1..seeds)
        .map(|seed| (seed, input(seed, 32)))
        .find(|(_, input)| exec.execute(input) != End::Ok)
        .expect("a failing input among the seeds");
    let record = exec.run(&failing);
    let signature = record.signature().expect("a failure");
    let pipeline = Pipeline {
        dir,
        shrink_budget: 500,
        timeout: Duration::from_secs(60),
        reproduce: None,
    };
    let found = Found {
        executions,
        seconds: 0.0,
    };
    let processed = finding::process(
        exec,
        &failing,
        Some(&signature),
        found,
        &mut BTreeSet::new(),
        &pipeline,
    )
    .expect("the finding is written");
    let Processed::New(summary) = processed else {
        panic!("not a new finding: {processed:?}")
    };
    assert_eq!(summary.signature, signature);
    let shrunk = std::fs::read(summary.path.join("input")).expect("the finding's input");
    assert!(summary.path.join("finding.json").is_file());
    let replayed = exec.run(&shrunk);
    assert_eq!(replayed.signature(), Some(signature));
    (shrunk, replayed)
}

/// What a replay must repeat.
fn trace(record: &RunRecord) -> impl PartialEq + std::fmt::Debug + use<> {
    (
        record.trace_hash,
        record.consumed,
        record
            .decisions
            .iter()
            .map(|d| (d.offset, d.value, d.site, d.width, d.kind))
            .collect::<Vec<_>>(),
        format!("{:?}", record.outcome),
    )
}

#[test]
fn a_wasm_and_an_emulator_executor_run_at_once_each_to_its_own_finding() {
    let Some(program) = counter() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("dst-levels-findings-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (wasm_dir, riscv_dir) = (dir.join("wasm"), dir.join("riscv"));
    std::fs::create_dir_all(&wasm_dir).unwrap();
    std::fs::create_dir_all(&riscv_dir).unwrap();

    let (done, results) = mpsc::channel();
    let program_in_run = program.clone();
    let mut native = InProcess::new(move || {
        // The native SDK's run: one decision of its own.
        let own = dst::random::u64();
        std::hint::black_box(own);
        std::thread::scope(|scope| {
            let wasm = scope.spawn(|| {
                let mut exec = lease();
                to_finding(&mut exec, &wasm_dir, 200_000)
            });
            let riscv = scope.spawn(|| {
                let args = ["counter".to_string()];
                let mut exec = Emulator::open(&program_in_run, &args, 10_000_000).unwrap();
                to_finding(&mut exec, &riscv_dir, 3_000)
            });
            let found = (wasm.join().unwrap(), riscv.join().unwrap());
            done.send(found).unwrap();
        });
    });
    // A backstop for the failure this test exists for (the threads waiting
    // for the in-process run, which waits for them): not a speed limit.
    let runner = std::thread::spawn(move || {
        let end = native.execute(&[]);
        let decisions = native.region().decisions().len();
        (end, decisions)
    });
    let (wasm, riscv) = results
        .recv_timeout(Duration::from_secs(600))
        .expect("both guest executors reach their findings inside the in-process run");
    let (end, native_decisions) = runner.join().unwrap();
    assert_eq!(end, End::Ok);
    assert_eq!(
        native_decisions, 1,
        "the in-process run's region holds its own decision only"
    );

    let (wasm_input, wasm_record) = wasm;
    let (riscv_input, riscv_record) = riscv;
    assert!(
        format!("{:?}", wasm_record.outcome).contains("trap: unreachable"),
        "{:?}",
        wasm_record.outcome
    );
    assert!(
        format!("{:?}", riscv_record.outcome).contains("SIGABRT"),
        "{:?}",
        riscv_record.outcome
    );
    // Each finding replays alone, in this thread, to the same trace.
    assert_eq!(trace(&lease().run(&wasm_input)), trace(&wasm_record));
    let mut emulator = Emulator::open(&program, &["counter".to_string()], 10_000_000).unwrap();
    assert_eq!(trace(&emulator.run(&riscv_input)), trace(&riscv_record));
    let _ = std::fs::remove_dir_all(&dir);
}
