//! A Rust binary using only the `dst` crate, run by the process executor:
//! its catalog comes from the program itself, its fork server starts before
//! `main`, and `dst::run` keeps one process for many inputs.

use std::path::PathBuf;
use std::time::Duration;

use dst_executors::{Executor, Process};
use dst_kernel::Signature;

/// target/debug/examples/persistent, built here (`cargo test` builds it
/// too, but not when only this test is asked for).
fn example() -> PathBuf {
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "dst", "--example", "persistent"])
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
        .join("examples/persistent");
    assert!(path.exists(), "{} is built by cargo test", path.display());
    path
}

#[test]
fn a_rust_binary_runs_under_the_process_executor_in_persistent_mode() {
    let mut exec = Process::new(&example(), &[], Duration::from_secs(5)).unwrap();
    let messages: Vec<String> = exec.catalog().iter().map(|s| s.message.clone()).collect();
    assert!(
        messages.contains(&"the decisions are never 13 then 37".to_string()),
        "{messages:?}"
    );
    let nominal = exec.run(&[]);
    assert_eq!(exec.launch_mode(), "fork server");
    assert!(nominal.signature().is_none());
    let failing = [0, 0, 0, 0, 0, 0, 0, 0, 13, 37];
    let record = exec.run(&failing);
    assert_eq!(
        record.signature(),
        Some(Signature::Property {
            message: "the decisions are never 13 then 37".into()
        })
    );
    // Many runs, one process: each run starts from its own input.
    for i in 0..50u8 {
        let again = exec.run(&[0, 0, 0, 0, 0, 0, 0, 0, i, 1]);
        assert_eq!(again.decisions.len(), 2);
        assert_eq!(again.decisions[0].value, u64::from(i % 100));
    }
    assert_eq!(exec.run(&failing).trace_hash, record.trace_hash);
    assert_eq!(exec.run(&[]).trace_hash, nominal.trace_hash);
}
