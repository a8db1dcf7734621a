//! `cargo dst-fuzz run --riscv`: the explorer over a static riscv64 Linux
//! program on the emulator. examples/riscv/lease.c's abort (a clock jump,
//! then one getrandom value in 8) and examples/riscv/counter.c's lost
//! update (two threads, plain memory, a preemption between a load and a
//! store) are found and replay identically; a file that is not a riscv64
//! program is one line and exit 4.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::{driver, root, text};

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

/// Whether the cross compiler is installed (saying so when not).
fn have_compiler() -> bool {
    let there = Command::new("riscv64-linux-gnu-gcc")
        .arg("--version")
        .output()
        .is_ok();
    if !there {
        eprintln!("skipped: riscv64-linux-gnu-gcc is not installed");
    }
    there
}

/// Explores `program` with seed 1 until a finding (a SIGABRT, not flaky),
/// Explores `program` with seed 1 until a finding (a SIGABRT, not flaky),
/// then replays it; returns what the replay showed.
fn find_and_replay_abort(dir: &Path, program: &str, runs: &str) -> String {
    let (record, shown) = common::find_and_replay(dir, &["--riscv", program], runs);
    assert_eq!(record["signature"]["cause"], "SIGABRT", "{record}");
    // Placed where the program aborts, past glibc's frames (unwound).
    assert!(shown.contains("outcome: SIGABRT at main ("), "{shown}");
    assert!(
        shown.contains("stack: __pthread_kill_implementation"),
        "{shown}"
    );
    shown
}

#[test]
fn the_lease_abort_is_found_and_replayed() {
    let Some((dir, program)) = build_example("lease", &[]) else {
        return;
    };
    let shown = find_and_replay_abort(&dir, &program, "50000");
    assert!(shown.contains("getrandom"), "{shown}");

    // Not riscv, cut short, or its program headers broken: one line, 4.
    let bytes = std::fs::read(&program).unwrap();
    let cut = dir.join("cut");
    std::fs::write(&cut, &bytes[..3000]).unwrap();
    let mut broken = bytes.clone();
    broken[0x20..0x28].copy_from_slice(&u64::MAX.to_le_bytes()); // e_phoff
    let broken_path = dir.join("broken");
    std::fs::write(&broken_path, &broken).unwrap();
    for (file, says) in [
        (Path::new("/bin/true"), "not a riscv64 program"),
        (cut.as_path(), "not an ELF file"),
        (broken_path.as_path(), "not an ELF file"),
    ] {
        let bad = driver(
            &dir,
            &["run", "--riscv", file.to_str().unwrap(), "--runs", "1"],
        );
        let shown = text(&bad);
        assert_eq!(bad.status.code(), Some(4), "{}: {shown}", file.display());
        assert!(shown.contains(says), "{}: {shown}", file.display());
        assert_eq!(shown.trim().lines().count(), 1, "{shown}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_lost_update_on_plain_memory_is_found_by_preemption_and_replayed() {
    let Some((dir, program)) = build_example("counter", &["-pthread"]) else {
        return;
    };
    let shown = find_and_replay_abort(&dir, &program, "20000");
    // The schedule names the preemption inside the loop, and the output.
    assert!(shown.contains("<- preempts thread"), "{shown}");
    assert!(shown.contains("stopped in visit ("), "{shown}");
    assert!(shown.contains("counter.c:"), "{shown}");
    assert!(shown.contains("lost "), "{shown}");
    assert!(shown.contains("clone="), "the system calls: {shown}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_dst_h_program_decides_and_fails_alike_natively_and_on_the_emulator() {
    use dst_executors::Process;
    use dst_executors::riscv::executor::Emulator;
    let dir = std::env::temp_dir().join(format!("dst-riscv-ledger-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // One source path for both builds: decision sites name __FILE__.
    let source = root().join("examples/riscv/ledger.c");
    let guest = dir.join("ledger");
    let cc = driver(
        &dir,
        &[
            "cc",
            "--riscv",
            "-o",
            guest.to_str().unwrap(),
            source.to_str().unwrap(),
        ],
    );
    if !have_compiler() {
        return;
    }
    assert_eq!(cc.status.code(), Some(0), "cc --riscv: {}", text(&cc));
    let native = dir.join("ledger-native");
    common::native_with_libdst(&source, &native);
    let mut process = Process::new(&native, &[], std::time::Duration::from_secs(10)).unwrap();
    let mut emulator = Emulator::open(&guest, &["ledger".to_string()], 10_000_000).unwrap();
    common::same_decisions_and_ends(
        &mut process,
        &mut emulator,
        "property \"the balance never goes negative\" failed",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_dst_h_guest_built_with_cc_reports_its_catalog_and_properties() {
    if !have_compiler() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("dst-riscv-cc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let guest = dir.join("ledger");
    let guest_arg = guest.to_str().unwrap();
    let source = root().join("examples/riscv/ledger.c");
    let cc = driver(
        &dir,
        &["cc", "--riscv", "-o", guest_arg, source.to_str().unwrap()],
    );
    assert_eq!(cc.status.code(), Some(0), "{}", text(&cc));
    // Every property, from the ELF's dst_catalog section, without a run.
    let catalog = driver(&dir, &["catalog", guest_arg]);
    let listed = text(&catalog);
    assert!(
        listed.contains("\"the balance never goes negative\" at "),
        "{listed}"
    );
    assert!(
        listed.contains("\"the account is nearly empty\" at "),
        "{listed}"
    );
    let run = driver(
        &dir,
        &[
            "run", "--riscv", guest_arg, "--runs", "1000", "--seed", "1", "--json", "--quiet",
        ],
    );
    assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    let summary: Value = serde_json::from_slice(&run.stdout).unwrap();
    let status = |message: &str| {
        summary["properties"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["message"] == message)
            .map(|p| p["status"].as_str().unwrap().to_string())
    };
    assert_eq!(
        status("the balance never goes negative").as_deref(),
        Some("failing"),
        "{summary}"
    );
    assert_eq!(
        status("the account is nearly empty").as_deref(),
        Some("passing"),
        "{summary}"
    );

    // A build that fails is one line and exit 7, and the program is kept.
    let before = std::fs::read(&guest).unwrap();
    std::fs::write(dir.join("bad.c"), "int main(void) { return nonsense; }\n").unwrap();
    let bad = driver(
        &dir,
        &[
            "cc",
            "--riscv",
            "-o",
            guest_arg,
            dir.join("bad.c").to_str().unwrap(),
        ],
    );
    assert_eq!(bad.status.code(), Some(7), "{}", text(&bad));
    let last = String::from_utf8_lossy(&bad.stderr)
        .trim()
        .lines()
        .last()
        .unwrap()
        .to_string();
    assert!(last.contains("the riscv build of"), "{last}");
    assert_eq!(
        std::fs::read(&guest).unwrap(),
        before,
        "the old program is intact"
    );
    let no_level = driver(&dir, &["cc", "-o", guest_arg, "bad.c"]);
    assert_eq!(no_level.status.code(), Some(2), "{}", text(&no_level));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cluster_s_lost_write_is_found_shrunk_and_replayed_with_each_node_s_calls() {
    // examples/cluster: a register server that acknowledges a write
    // before it is durable, and its client, on two nodes.
    if !have_compiler() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("dst-riscv-cluster-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["register-server", "register-client"] {
        let built = Command::new("riscv64-linux-gnu-gcc")
            .args(["-O1", "-g", "-static"])
            .arg(root().join(format!("examples/cluster/{name}.c")))
            .arg("-o")
            .arg(dir.join(name))
            .status()
            .unwrap();
        assert!(built.success());
    }
    let toml = dir.join("register.toml");
    std::fs::copy(root().join("examples/cluster/register.toml"), &toml).unwrap();
    let file = toml.to_str().unwrap();
    let (record, shown) = common::find_and_replay(&dir, &["--cluster", file], "5000");
    assert_eq!(record["signature"]["cause"], "exit", "{record}");
    assert!(
        record["message"]
            .as_str()
            .unwrap()
            .contains("node client: the program exited with status 1"),
        "{record}"
    );
    // The server crashed (a fault decision of the world) and came back.
    assert!(shown.contains("fault  = 1 at sim: node crash"), "{shown}");
    assert!(shown.contains("server: [node crash: restarted]"), "{shown}");
    assert!(shown.contains("client: connect=0"), "{shown}");
    assert!(
        shown.contains("lost an acknowledged write: read"),
        "{shown}"
    );
    // minimize and ci take the cluster too: the minimized input still
    // fails; ci replays the stored finding (still failing: not new).
    let findings = dir.join("findings/register");
    let folder = std::fs::read_dir(&findings)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("input").is_file())
        .unwrap();
    let input = folder.join("input");
    let minimized = driver(
        &dir,
        &["minimize", input.to_str().unwrap(), "--cluster", file],
    );
    // (Exit 1: the input it wrote fails.)
    assert_eq!(minimized.status.code(), Some(1), "{}", text(&minimized));
    let min = folder.join("input.min");
    let replay = driver(&dir, &["replay", min.to_str().unwrap(), "--cluster", file]);
    assert_eq!(replay.status.code(), Some(1), "{}", text(&replay));
    let ci = driver(&dir, &["ci", "register", "--cluster", file, "--time", "2s"]);
    let said = text(&ci);
    assert_eq!(ci.status.code(), Some(0), "{said}");
    assert!(said.contains("0 new finding(s), 1 still failing"), "{said}");

    // A cluster file with an unknown key, or a node whose program is no
    // riscv64 program: one line, exit 4.
    std::fs::write(
        dir.join("bad.toml"),
        "[[node]]\nname = \"a\"\nprogram = \"register-server\"\nport = 1\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("true.toml"),
        "[[node]]\nname = \"a\"\nprogram = \"/bin/true\"\n",
    )
    .unwrap();
    for (file, says) in [
        ("bad.toml", "unknown field `port`"),
        ("true.toml", "node a (/bin/true): not a riscv64 program"),
    ] {
        let path = dir.join(file);
        let bad = driver(
            &dir,
            &["run", "--cluster", path.to_str().unwrap(), "--runs", "1"],
        );
        let shown = text(&bad);
        assert_eq!(bad.status.code(), Some(4), "{file}: {shown}");
        assert!(shown.contains(says), "{file}: {shown}");
        assert_eq!(shown.trim().lines().count(), 1, "{shown}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
