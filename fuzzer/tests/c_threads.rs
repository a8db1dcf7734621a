//! Unmodified pthread programs under the explorer: libdst interposes the
//! pthread functions, so `run --cmd` explores thread schedules of a C
//! program. The C ports of examples/concurrency are each found, and the
//! deadlock replays with its schedule at the program's own lines.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// Builds libdst, then the C ports, once per test process: the tests run in
/// parallel, and one compiler writing the binary while another test runs it
/// would hand that test a half-written file.
fn build_sctbench() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build).clone()
}

fn build() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "dst-c"])
        .current_dir(root())
        .status()
        .expect("run cargo build for libdst");
    assert!(status.success());
    let out = std::env::temp_dir().join(format!("dst-sctbench-{}", std::process::id()));
    let status = Command::new("cc")
        .args(["-std=c11", "-g", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(root().join("examples/concurrency/c/sctbench.c"))
        .arg("-I")
        .arg(root().join("sdk-c/include"))
        .arg("-L")
        .arg(lib_dir())
        .arg("-ldst")
        .arg(format!("-Wl,-rpath,{}", lib_dir().display()))
        .arg("-lpthread")
        .status()
        .expect("run cc");
    assert!(status.success(), "sctbench.c compiles");
    out
}

fn driver(dir: &Path, args: &[&str], program: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-dst-fuzz"))
        .current_dir(dir)
        .args(args)
        .arg("--")
        .args(program)
        .output()
        .unwrap()
}

/// Explores `sctbench PROGRAM...` and returns the summary.
fn explore(binary: &Path, program: &[&str], runs: &str) -> (PathBuf, Value) {
    let tag = program.join("-");
    let dir = std::env::temp_dir().join(format!("dst-cthreads-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut command = vec![binary.to_str().unwrap()];
    command.extend(program);
    let out = driver(
        &dir,
        &[
            "run",
            "sct",
            "--runs",
            runs,
            "--seed",
            "1",
            "--json",
            "--quiet",
            "--stop-on-finding",
            "--cmd",
        ],
        &command,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{tag}: a finding; {stderr}");
    (
        dir,
        serde_json::from_slice(out.stdout.trim_ascii()).unwrap(),
    )
}

#[test]
fn each_c_port_is_found() {
    let binary = build_sctbench();
    for (program, runs, message) in [
        (&["account"][..], "5000", "account: the balance"),
        (&["lazy01"], "5000", "lazy01: the checker never sees 3"),
        (&["stack"], "5000", "stack: no pop underflows"),
        (&["twostage", "2"], "5000", "twostage: the reader"),
        (&["reorder", "5"], "10000", "reorder: the checker"),
        (&["wsq"], "10000", "wsq: every item"),
    ] {
        let (dir, summary) = explore(&binary, program, runs);
        let findings = summary["findings"].as_array().unwrap();
        assert!(
            findings.iter().any(|f| f["signature"]["message"]
                .as_str()
                .unwrap()
                .starts_with(message)),
            "{program:?}: {summary}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn a_c_deadlock_replays_with_its_schedule_at_the_programs_lines() {
    let binary = build_sctbench();
    let (dir, summary) = explore(&binary, &["deadlock01"], "5000");
    let finding = &summary["findings"][0];
    assert_eq!(
        finding["signature"]["message"],
        "dst: deadlock (every live thread is blocked)"
    );
    let path = dir.join(finding["path"].as_str().unwrap());
    let record: Value =
        serde_json::from_slice(&std::fs::read(path.join("finding.json")).unwrap()).unwrap();
    let threads = record["details"]["threads"].as_array().unwrap();
    let locks: Vec<&str> = threads
        .iter()
        .filter(|t| t["op"] == "lock")
        .map(|t| t["at"].as_str().unwrap())
        .collect();
    assert_eq!(locks.len(), 2, "{record}");
    assert!(
        locks.iter().all(|at| at.contains("sctbench.c:")),
        "{record}"
    );

    let input = path.join("input");
    let replay = driver(
        &dir,
        &["replay", input.to_str().unwrap(), "--cmd"],
        &[binary.to_str().unwrap(), "deadlock01"],
    );
    let text = String::from_utf8_lossy(&replay.stdout);
    assert_eq!(replay.status.code(), Some(1), "{text}");
    assert!(text.contains("replayed 3 times: identical"), "{text}");
    assert!(text.contains("<- preempts thread"), "{text}");
    assert!(text.contains("sctbench.c:"), "{text}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn without_an_explorer_the_program_runs_on_real_threads() {
    let binary = build_sctbench();
    // No DST_SEED or DST_INPUT: the C library's pthreads; the nominal
    // interleaving of these programs passes.
    let out = Command::new(&binary)
        .arg("reorder")
        .arg("5")
        .env_remove("DST_SEED")
        .env_remove("DST_INPUT")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // A DST_INPUT replay is controlled: the all-zero input is the nominal
    // schedule, whose stack program passes; DST_SEED picks another.
    let input = std::env::temp_dir().join(format!("dst-cthreads-nominal-{}", std::process::id()));
    std::fs::write(&input, [0u8; 8]).unwrap();
    let nominal = Command::new(&binary)
        .arg("deadlock01")
        .env("DST_INPUT", &input)
        .output()
        .unwrap();
    assert_eq!(
        nominal.status.code(),
        Some(0),
        "the nominal schedule does not deadlock"
    );
    let deadlocks = (1..40)
        .filter(|seed| {
            let out = Command::new(&binary)
                .arg("deadlock01")
                .env("DST_SEED", seed.to_string())
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stderr).contains("dst: deadlock")
        })
        .count();
    assert!(deadlocks > 0, "some seed deadlocks");
}
