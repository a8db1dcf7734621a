//! `cargo dst-fuzz run --wasm`: the explorer over a WebAssembly module that
//! imports nothing from dst. The lease example's bug (a clock jump, then
//! one particular random ticket) is found, shrunk, replayed with its WASI
//! calls and output, and minimized; bad modules are one-line errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn lease() -> PathBuf {
    root().join("examples/wasm/lease.wat")
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

fn fresh(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dst-wasm-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Explores `module` with explorer seed 1 until its first finding; returns
/// it (from the JSON summary) and its folder.
fn first_finding(dir: &Path, module: &str, runs: &str) -> (Value, PathBuf) {
    let run = driver(
        dir,
        &[
            "run",
            "--wasm",
            module,
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
    let finding = summary["findings"][0].clone();
    let folder = PathBuf::from(finding["path"].as_str().unwrap());
    (finding, folder)
}

/// [`first_finding`], which must be an `unreachable` trap.
fn first_trap(dir: &Path, module: &str, runs: &str) -> PathBuf {
    let (finding, folder) = first_finding(dir, module, runs);
    assert_eq!(
        finding["signature"]["cause"], "trap: unreachable",
        "{finding}"
    );
    folder
}

#[test]
fn the_lease_bug_is_found_shrunk_and_replayed() {
    let dir = fresh("lease");
    let module = lease();
    let module = module.to_str().unwrap();
    let folder = first_trap(&dir, module, "200000");
    let record: Value =
        serde_json::from_slice(&std::fs::read(folder.join("finding.json")).unwrap()).unwrap();
    assert_eq!(
        record["reproduced"]["failed"], 5,
        "confirmed by every replay"
    );
    assert_eq!(record["flaky"], false);
    let shrunk = std::fs::read(folder.join("input")).unwrap();
    // Seed, the nominal first reading, the jump (byte and two size bytes),
    // the ticket: no more than that survives shrinking.
    assert!(shrunk.len() <= 13, "shrunk to {} bytes", shrunk.len());
    let explain = record["reproduce"]["explain"].as_str().unwrap();
    assert!(explain.contains("--wasm"), "{explain}");

    let input = folder.join("input");
    let replay = driver(&dir, &["replay", input.to_str().unwrap(), "--wasm", module]);
    let shown = text(&replay);
    assert_eq!(replay.status.code(), Some(1), "{shown}");
    assert!(shown.contains("outcome: trap: unreachable"), "{shown}");
    assert!(shown.contains("replayed 3 times: identical"), "{shown}");
    assert!(shown.contains("random_get=0"), "the WASI calls: {shown}");
    assert!(shown.contains("| lease expired"), "the output: {shown}");

    let out = dir.join("min");
    let minimize = driver(
        &dir,
        &[
            "minimize",
            input.to_str().unwrap(),
            "--wasm",
            module,
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(minimize.status.code(), Some(1), "{}", text(&minimize));
    assert!(std::fs::read(&out).unwrap().len() <= shrunk.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_catalog_of_a_module_without_dst_is_empty() {
    let dir = fresh("catalog");
    let out = driver(&dir, &["catalog", lease().to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let sites: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        sites,
        serde_json::json!([]),
        "no dst imports, no properties"
    );
}

#[test]
fn the_environment_flag_takes_key_value_pairs() {
    let dir = fresh("env");
    let module = lease();
    let module = module.to_str().unwrap();
    let bad = driver(
        &dir,
        &["run", "--wasm", module, "--env", "NOEQUALS", "--runs", "1"],
    );
    assert_eq!(bad.status.code(), Some(2), "a usage error: {}", text(&bad));
    assert!(text(&bad).contains("is not KEY=VALUE"), "{}", text(&bad));
    let good = driver(
        &dir,
        &[
            "run", "--wasm", module, "--env", "A=1", "--runs", "10", "--seed", "1", "--quiet",
        ],
    );
    assert_eq!(good.status.code(), Some(0), "{}", text(&good));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_modules_are_one_line_errors_with_their_own_status() {
    let dir = fresh("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let cases: [(&str, &[u8], i32, &str); 4] = [
        ("garbage.wasm", b"\0asm\x01\0\0\0\x01\xff", 4, "byte offset"),
        ("text.wat", b"(module (func (export \"_start\") (i32.add)))", 4, "unsupported module"),
        (
            "imports.wat",
            b"(module (import \"env\" \"f\" (func)) (import \"dst\" \"g\" (func)) (func (export \"_start\")))",
            4,
            "env.f, dst.g",
        ),
        (
            "start.wat",
            b"(module (func $s unreachable) (start $s) (func (export \"_start\")))",
            6,
            "start function",
        ),
    ];
    for (name, bytes, status, says) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let run = driver(
            &dir,
            &[
                "run",
                "--wasm",
                path.to_str().unwrap(),
                "--runs",
                "10",
                "--quiet",
            ],
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(status), "{name}: {stderr}");
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "{name}: one line: {stderr}"
        );
        assert!(stderr.contains(says), "{name}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Builds a Rust example for wasm32-wasip1 (cargo arguments naming it;
/// `product`: its module's file name), or says why not.
fn build_module(package: &[&str], product: &str) -> Option<PathBuf> {
    let libdir = Command::new("rustc")
        .args(["--print", "target-libdir", "--target", "wasm32-wasip1"])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if !libdir.is_some_and(|d| d.is_dir()) {
        eprintln!(
            "skipped: the wasm32-wasip1 target is not installed (rustup target add wasm32-wasip1)"
        );
        return None;
    }
    let target_dir = root().join("target/wasm-examples");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--release", "--target", "wasm32-wasip1"])
        .args(package)
        .arg("--target-dir")
        .arg(&target_dir)
        .current_dir(root())
        .env_remove("RUSTFLAGS")
        .status()
        .expect("run cargo build");
    assert!(status.success(), "{product} builds for wasm32-wasip1");
    Some(target_dir.join("wasm32-wasip1/release").join(product))
}

/// examples/wasm/lease-rs: plain std, its own workspace.
fn rust_module() -> Option<PathBuf> {
    build_module(
        &["--manifest-path", "examples/wasm/lease-rs/Cargo.toml"],
        "lease-rs.wasm",
    )
}

/// examples/wasm/tickets: dst's assertions and decisions.
fn tickets_module() -> Option<PathBuf> {
    build_module(&["-p", "dst-example-tickets"], "dst-example-tickets.wasm")
}

#[test]
fn an_unmodified_rust_std_program_is_explored_and_its_panic_replayed() {
    let Some(module) = rust_module() else {
        return;
    };
    let module = module.to_str().unwrap();
    let dir = fresh("rust");
    let input = first_trap(&dir, module, "50000").join("input");
    let replay = driver(&dir, &["replay", input.to_str().unwrap(), "--wasm", module]);
    let shown = text(&replay);
    assert!(shown.contains("replayed 3 times: identical"), "{shown}");
    assert!(
        shown.contains("lease expired, renewing"),
        "its stdout: {shown}"
    );
    assert!(
        shown.contains("wrote under a lease another holder took"),
        "its panic message, from stderr: {shown}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rust_program_with_dst_assertions_is_explored_in_wasm() {
    let Some(module) = tickets_module() else {
        return;
    };
    let module = module.to_str().unwrap();
    let dir = fresh("tickets");

    let catalog = driver(&dir, &["catalog", module, "--json"]);
    assert_eq!(catalog.status.code(), Some(0), "{}", text(&catalog));
    let sites: Value = serde_json::from_slice(&catalog.stdout).unwrap();
    let messages: Vec<&str> = sites
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["message"].as_str().unwrap())
        .collect();
    assert!(
        messages.contains(&"a seat is sold twice") && messages.contains(&"payment reply lost"),
        "read from the dst_catalog section, reached or not: {messages:?}"
    );

    let (finding, folder) = first_finding(&dir, module, "100000");
    assert_eq!(
        finding["signature"]["message"], "a customer is charged at most once",
        "{finding}"
    );
    let record: Value =
        serde_json::from_slice(&std::fs::read(folder.join("finding.json")).unwrap()).unwrap();
    assert_eq!(record["flaky"], false, "{record}");
    let input = folder.join("input");
    // Seed, then at most the six seat choices, the fault and the routing.
    let shrunk = std::fs::read(&input).unwrap();
    assert!(shrunk.len() <= 8 + 8, "shrunk to {} bytes", shrunk.len());

    let replay = driver(&dir, &["replay", input.to_str().unwrap(), "--wasm", module]);
    let shown = text(&replay);
    assert_eq!(replay.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("outcome: property \"a customer is charged at most once\" failed"),
        "{shown}"
    );
    assert!(shown.contains("\"charges\":2"), "its details: {shown}");
    assert!(
        shown.contains("fault  \"payment reply lost\" FIRED at examples/wasm/tickets/src/main.rs"),
        "decisions named by their sites: {shown}"
    );
    assert!(shown.contains("replayed 3 times: identical"), "{shown}");
    let _ = std::fs::remove_dir_all(&dir);
}
