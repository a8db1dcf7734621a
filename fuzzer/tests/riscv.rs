//! `cargo dst-fuzz run --riscv`: the explorer over a static riscv64 Linux
//! program on the emulator. examples/riscv/lease.c's abort (a clock jump,
//! then one getrandom value in 8) and examples/riscv/counter.c's lost
//! update (two threads, plain memory, a preemption between a load and a
//! store) are found and replay identically; a file that is not a riscv64
//! program is one line and exit 4.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn driver(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-dst-fuzz"))
        .arg("--fuzz-dir")
        .arg(dir)
        .args(args)
        .env("DST_NO_AFFINITY", "1")
        .output()
        .expect("run cargo-dst-fuzz")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A fresh directory with examples/riscv/NAME.c built into it (static,
/// with `flags`); `None` (saying so) without the cross compiler.
fn build_example(name: &str, flags: &[&str]) -> Option<(PathBuf, String)> {
    let dir = std::env::temp_dir().join(format!("dst-riscv-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join(name);
    let built = Command::new("riscv64-linux-gnu-gcc")
        .args(["-O1", "-g", "-static"])
        .args(flags)
        .arg(root().join(format!("examples/riscv/{name}.c")))
        .arg("-o")
        .arg(&program)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("skipped: riscv64-linux-gnu-gcc is not installed");
        return None;
    }
    Some((dir.clone(), program.to_str().unwrap().to_string()))
}

/// Explores `program` with seed 1 until a finding (a SIGABRT, not flaky),
/// then replays it; returns what the replay showed.
fn find_and_replay(dir: &Path, program: &str, runs: &str) -> String {
    let run = driver(
        dir,
        &[
            "run",
            "--riscv",
            program,
            "--runs",
            runs,
            "--seed",
            "1",
            "--stop-on-finding",
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(run.status.code(), Some(1), "a finding: {}", text(&run));
    let summary: Value = serde_json::from_slice(&run.stdout).unwrap();
    let finding = &summary["findings"][0];
    assert_eq!(finding["signature"]["cause"], "SIGABRT", "{summary}");
    let folder = PathBuf::from(finding["path"].as_str().unwrap());
    let record: Value =
        serde_json::from_slice(&std::fs::read(folder.join("finding.json")).unwrap()).unwrap();
    assert_eq!(record["flaky"], false, "{record}");
    let input = folder.join("input");
    let replay = driver(
        dir,
        &["replay", input.to_str().unwrap(), "--riscv", program],
    );
    let shown = text(&replay);
    assert_eq!(replay.status.code(), Some(1), "{shown}");
    assert!(shown.contains("outcome: SIGABRT"), "{shown}");
    assert!(shown.contains("replayed 3 times: identical"), "{shown}");
    shown
}

#[test]
fn the_lease_abort_is_found_and_replayed() {
    let Some((dir, program)) = build_example("lease", &[]) else {
        return;
    };
    let shown = find_and_replay(&dir, &program, "50000");
    assert!(shown.contains("getrandom"), "{shown}");

    let native = driver(&dir, &["run", "--riscv", "/bin/true", "--runs", "1"]);
    assert_eq!(native.status.code(), Some(4), "{}", text(&native));
    assert!(
        text(&native).contains("not a riscv64 program"),
        "{}",
        text(&native)
    );
    assert_eq!(text(&native).trim().lines().count(), 1, "{}", text(&native));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_lost_update_on_plain_memory_is_found_by_preemption_and_replayed() {
    let Some((dir, program)) = build_example("counter", &["-pthread"]) else {
        return;
    };
    let shown = find_and_replay(&dir, &program, "20000");
    // The schedule names the preemption inside the loop, and the output.
    assert!(shown.contains("<- preempts thread"), "{shown}");
    assert!(shown.contains("stopped in visit at "), "{shown}");
    assert!(shown.contains("counter.c:"), "{shown}");
    assert!(shown.contains("lost "), "{shown}");
    assert!(shown.contains("clone="), "the system calls: {shown}");
    let _ = std::fs::remove_dir_all(&dir);
}
