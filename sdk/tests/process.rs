//! A Rust binary using only the `dst` crate, run by the process executor:
//! its catalog comes from the program itself, its fork server starts before
//! `main` (the `forkserver` feature), and `dst::run` keeps one process for
//! many inputs; without the feature, one process per input.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dst_executors::{Executor, Process};
use dst_kernel::Signature;

/// target/debug/examples/`name`, built here with `features` (`cargo test`
/// builds it too, but with the workspace's features, and not when only this
/// test is asked for).
fn example(name: &str, features: &str) -> PathBuf {
    let status = std::process::Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "dst",
            "--features",
            features,
            "--example",
            name,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(status.success());
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(path.exists(), "{} is built by cargo test", path.display());
    path
}

const BUG: &str = "the decisions are never 13 then 37";
const FAILING: [u8; 10] = [0, 0, 0, 0, 0, 0, 0, 0, 13, 37];

/// Checks that `program`'s catalog has the bug's property, that the
/// nominal run passes in `launch_mode` and that the failing input fails it;
/// returns the executor and the nominal and failing runs' trace hashes.
fn explore(program: &Path, launch_mode: &str) -> (Process, u64, u64) {
    let mut exec = Process::new(program, &[], Duration::from_secs(5)).unwrap();
    let messages: Vec<String> = exec.catalog().iter().map(|s| s.message.clone()).collect();
    assert!(messages.iter().any(|m| m == BUG), "{messages:?}");
    let nominal = exec.run(&[]);
    assert_eq!(exec.launch_mode(), launch_mode);
    assert!(nominal.signature().is_none());
    let record = exec.run(&FAILING);
    assert_eq!(
        record.signature(),
        Some(Signature::Property {
            message: BUG.into()
        })
    );
    (exec, nominal.trace_hash, record.trace_hash)
}

#[test]
fn a_rust_binary_runs_under_the_process_executor_in_persistent_mode() {
    let program = example("persistent", "forkserver");
    let (mut exec, nominal, failing) = explore(&program, "fork server");
    // Many runs, one process: each run starts from its own input.
    for i in 0..50u8 {
        let again = exec.run(&[0, 0, 0, 0, 0, 0, 0, 0, i, 1]);
        assert_eq!(again.decisions.len(), 2);
        assert_eq!(again.decisions[0].value, u64::from(i % 100));
    }
    assert_eq!(exec.run(&FAILING).trace_hash, failing);
    assert_eq!(exec.run(&[]).trace_hash, nominal);
}

#[test]
fn without_the_forkserver_feature_a_rust_binary_runs_once_per_input() {
    let program = example("without_server", "");
    let (mut exec, nominal, failing) = explore(&program, "one process per run");
    assert_eq!(exec.run(&FAILING).trace_hash, failing);
    assert_eq!(exec.run(&[]).trace_hash, nominal);
}
