//! `cargo dst-fuzz run --cmd`: the explorer over C programs linking libdst,
//! built here with gcc. The key-value example's lost write is found, shrunk,
//! replayed and minimized; a program that misbehaves in every way a target
//! can (segfault, abort, endless loop, early exit, a scribbled region, a
//! child left behind) is explored to the end, each failure classified,
//! symbolized and replayed; a program without the SDK runs too.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// target/debug, where cargo puts libdst.so.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// Builds libdst, then `source` with gcc, edge coverage and debug info.
fn build_c(source: &Path, tag: &str) -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "dst-c"])
        .current_dir(root())
        .status()
        .expect("run cargo build for libdst");
    assert!(status.success());
    let out = std::env::temp_dir().join(format!("dst-cmd-{tag}-{}", std::process::id()));
    let status = Command::new("cc")
        .args([
            "-std=gnu11",
            "-g",
            "-O0",
            "-Wall",
            "-Werror",
            "-fsanitize-coverage=trace-pc",
            "-o",
        ])
        .arg(&out)
        .arg(source)
        .arg("-I")
        .arg(root().join("sdk-c/include"))
        .arg("-L")
        .arg(lib_dir())
        .arg("-ldst")
        .arg(format!("-Wl,-rpath,{}", lib_dir().display()))
        .status()
        .expect("run cc");
    assert!(status.success(), "{} compiles", source.display());
    out
}

fn driver(dir: &Path, args: &[&str], program: &[&Path]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-dst-fuzz"));
    command.current_dir(dir).args(args).arg("--").args(program);
    command.output().unwrap()
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dst-cmd-run-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn findings(dir: &Path, name: &str) -> Vec<(PathBuf, Value)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir.join("fuzz/findings").join(name)) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(path.join("finding.json")).unwrap();
        out.push((path, serde_json::from_str(&text).unwrap()));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn the_lost_write_of_the_key_value_store_is_found_shrunk_and_replayed() {
    let kv = build_c(&root().join("examples/c-kv/kv.c"), "kv");
    let dir = scratch("kv");
    let out = driver(
        &dir,
        &[
            "run",
            "kv",
            "--runs",
            "30000",
            "--seed",
            "7",
            "--json",
            "--quiet",
            "--stop-on-finding",
            "--cmd",
        ],
        &[&kv],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a finding: {stderr}");
    let summary: Value = serde_json::from_slice(out.stdout.trim_ascii()).unwrap();
    assert!(summary["executions"].as_u64().unwrap() > 0);
    let found = findings(&dir, "kv");
    let (path, finding) = found
        .iter()
        .find(|(_, f)| {
            let property = f["signature"]["message"].as_str().unwrap_or_default();
            property == "acknowledged writes survive a crash"
                || property == "a get returns the last acknowledged put"
        })
        .unwrap_or_else(|| panic!("the lost write: {found:?}"));
    // The shrunk input is no longer than the original and still fails the
    // same way; the finding says which faults it needed.
    let input = std::fs::read(path.join("input")).unwrap();
    let original = std::fs::read(path.join("original")).unwrap();
    assert!(input.len() <= original.len());
    let faults: Vec<&str> = finding["faults_fired"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(faults.contains(&"fsync fails"), "{finding}");
    assert!(faults.contains(&"machine crashes"), "{finding}");
    assert!(
        finding["location"]
            .as_str()
            .unwrap()
            .contains("examples/c-kv/kv.c:"),
        "{finding}"
    );
    assert!(
        finding["reproduce"]["debugger"]
            .as_str()
            .unwrap()
            .starts_with("DST_INPUT="),
        "{finding}"
    );

    // replay: the same failure, deterministic, every decision explained.
    let input_path = path.join("input");
    let replay = driver(
        &dir,
        &["replay", input_path.to_str().unwrap(), "--cmd"],
        &[&kv],
    );
    assert_eq!(replay.status.code(), Some(1));
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(
        text.contains(finding["signature"]["message"].as_str().unwrap()),
        "{text}"
    );
    assert!(text.contains("replayed 3 times: identical"), "{text}");
    assert!(text.contains("fsync fails"), "{text}");
    // Each decision is named by its C call site.
    let decisions = text.split("decisions (").nth(1).unwrap_or_default();
    assert!(
        decisions.contains("below  = ") && decisions.contains("c-kv/kv.c:"),
        "{text}"
    );
    assert!(!decisions.contains("sdk-c/src"), "{text}");

    // The plain binary replays it in local mode, as under gdb.
    let local = Command::new(&kv)
        .env("DST_INPUT", &input_path)
        .env("DST_ABORT_ON_FAILURE", "1")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(local.status.signal(), Some(libc::SIGABRT));
    assert!(String::from_utf8_lossy(&local.stderr).contains("dst: assertion failed"));

    // minimize: the shrunk input is already minimal or gets smaller.
    let minimized = driver(
        &dir,
        &["minimize", path.join("original").to_str().unwrap(), "--cmd"],
        &[&kv],
    );
    assert_eq!(minimized.status.code(), Some(1), "{minimized:?}");
    let min = std::fs::read(path.join("original.min")).unwrap();
    assert!(min.len() <= original.len());

    // report: the property table of the campaign, from the binary's catalog.
    let report = driver(&dir, &["report", "kv", "--cmd"], &[&kv]);
    assert_eq!(report.status.code(), Some(1));
    let table = String::from_utf8_lossy(&report.stdout);
    assert!(table.contains("failing"), "{table}");
    assert!(table.contains("\"the log was compacted\""), "{table}");
    // The store has no threads: the SDK's thread properties are not listed.
    assert!(!table.contains("dst: "), "{table}");
}

#[test]
fn a_misbehaving_service_is_explored_to_the_end_and_each_failure_replays() {
    let program = build_c(&root().join("fuzzer/tests/c/misbehave.c"), "misbehave");
    let dir = scratch("misbehave");
    let marker = dir.join("child-outlived-its-run");
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-dst-fuzz"))
        .current_dir(&dir)
        .env("MISBEHAVE_MARKER", &marker)
        .args([
            "run",
            "misbehave",
            "--runs",
            "400",
            "--seed",
            "3",
            "--timeout-ms",
            "200",
            "--json",
            "--quiet",
            "--cmd",
            "--",
        ])
        .arg(&program)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let summary: Value = serde_json::from_slice(out.stdout.trim_ascii()).unwrap();
    assert!(
        summary["executions"].as_u64().unwrap() >= 400,
        "the explorer kept running: {summary}"
    );
    let found = findings(&dir, "misbehave");
    let kinds: Vec<String> = found
        .iter()
        .map(|(_, f)| f["signature"].to_string())
        .collect();
    let crash = |cause: &str| {
        found
            .iter()
            .find(|(_, f)| f["signature"]["cause"] == cause)
            .unwrap_or_else(|| panic!("a {cause} finding among {kinds:?}"))
    };

    // Signals: classified, with the faulting function and line from DWARF.
    let (segv_path, segv) = crash("SIGSEGV");
    let at = segv["signature"]["at"].as_str().unwrap();
    assert!(at.contains("null_write"), "{at}");
    assert!(at.contains("misbehave.c:12"), "{at}");
    assert!(at.contains(", stack "), "a stack hash: {at}");
    let (_, abort) = crash("SIGABRT");
    let at = abort["signature"]["at"].as_str().unwrap();
    assert!(at.contains("fail_hard"), "{at}");
    // A scribbled header is restored and reported.
    crash("region");
    // The endless loop is a timeout.
    assert!(
        found
            .iter()
            .any(|(_, f)| f["signature"]["kind"] == "timeout"),
        "{kinds:?}"
    );
    // A plain assertion failure too.
    assert!(
        found
            .iter()
            .any(|(_, f)| f["signature"]["message"] == "path seven is never taken"),
        "{kinds:?}"
    );
    // The child left behind was killed with its run's process group.
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(!marker.exists(), "a child outlived its run");

    // replay shows the symbolized stack of the crash.
    let replay = driver(
        &dir,
        &["replay", segv_path.join("input").to_str().unwrap(), "--cmd"],
        &[&program],
    );
    assert_eq!(replay.status.code(), Some(1));
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(text.contains("outcome: SIGSEGV at null_write"), "{text}");
    assert!(
        text.contains("in main at "),
        "the stack goes on to main: {text}"
    );
    assert!(text.contains("replayed 3 times: identical"), "{text}");
}

#[test]
fn a_program_without_the_sdk_runs_one_process_per_input() {
    let dir = scratch("true");
    let out = driver(
        &dir,
        &["run", "--runs", "30", "--json", "--quiet", "--cmd"],
        &[Path::new("true")],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(out.stdout.trim_ascii()).unwrap();
    assert!(summary["executions"].as_u64().unwrap() >= 30);
    assert!(findings(&dir, "true").is_empty());

    // A program that is not there is a usage error, in one line.
    let missing = driver(
        &dir,
        &["run", "--runs", "1", "--cmd"],
        &[Path::new("/no/such/program")],
    );
    assert_eq!(missing.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn a_rust_binary_using_only_dst_is_explored_with_its_catalog() {
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "dst",
            "--features",
            "forkserver",
            "--example",
            "persistent",
        ])
        .current_dir(root())
        .status()
        .unwrap();
    assert!(status.success());
    let program = lib_dir().join("examples/persistent");
    let dir = scratch("rust");
    let out = driver(
        &dir,
        &["run", "--runs", "3000", "--quiet", "--cmd"],
        &[&program],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    // The campaign knows the program's properties, asked of the program.
    let report = driver(&dir, &["report", "--json", "--cmd"], &[&program]);
    let report: Value = serde_json::from_slice(report.stdout.trim_ascii()).unwrap();
    let text = report["properties"].to_string();
    assert!(
        text.contains("the decisions are never 13 then 37"),
        "{text}"
    );
    assert!(
        text.contains("the first decision is sometimes large"),
        "{text}"
    );
}

/// The input that takes path `path` of misbehave.c (its one decision).
fn path_input(path: u8) -> Vec<u8> {
    let mut input = vec![0; 8];
    input.push(path);
    input
}

#[test]
fn one_crash_has_one_signature_and_every_scribble_is_reported() {
    use dst_executors::{Executor, Process};
    use dst_kernel::{Outcome, Signature};
    // The same program built twice, under two names: a crash's signature
    // depends on neither the run nor the binary's name.
    let programs = [
        build_c(&root().join("fuzzer/tests/c/misbehave.c"), "signature-a"),
        build_c(&root().join("fuzzer/tests/c/misbehave.c"), "signature-b"),
    ];
    let mut signatures: Vec<(u8, Signature)> = Vec::new();
    for program in &programs {
        let mut exec = Process::new(program, &[], Duration::from_millis(300)).unwrap();
        for round in 0..10 {
            for path in [1, 2] {
                let record = exec.run(&path_input(path));
                signatures.push((path, record.signature().expect("a crash")));
            }
            // A scribble is a region finding every time: after a clean
            // exit (path 5), and when the run then hangs past its limit
            // (path 8) and is killed.
            for path in [5, 8] {
                let record = exec.run(&path_input(path));
                assert!(
                    matches!(&record.outcome, Outcome::Crash { cause, .. } if cause == "region"),
                    "round {round}, path {path}: {:?}",
                    record.outcome
                );
            }
            // And the run after it is clean.
            assert_eq!(exec.run(&path_input(0)).outcome, Outcome::Pass);
        }
    }
    for path in [1, 2] {
        let mut distinct: Vec<&Signature> = signatures
            .iter()
            .filter(|(p, _)| *p == path)
            .map(|(_, s)| s)
            .collect();
        distinct.dedup();
        assert_eq!(distinct.len(), 1, "path {path}: {distinct:?}");
    }
}
