//! Cross-level replay: one Rust program with dst assertions and decisions
//! (examples/wasm/tickets), built natively and for wasm32-wasip1, run by the
//! process executor and by the wasm executor, takes the same decisions
//! (kind, site, value, stream offset), names the same decision sites and
//! ends the same way for the same input bytes. And one C service with
//! sockets and files (executors/tests/cross/service.c), built natively and
//! for riscv64, prints and writes the same through the process executor
//! and on the emulator's Linux.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use dst::catalog::SiteInfo;
use dst::region::Event;
use dst_executors::wasm::{Options, Wasm};
use dst_executors::{Executor, Process};
use dst_kernel::RunRecord;
use dst_kernel::finding::traced_run;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Whether rustc has the wasm32-wasip1 standard library.
fn wasm_target_installed() -> bool {
    Command::new("rustc")
        .args(["--print", "target-libdir", "--target", "wasm32-wasip1"])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .is_some_and(|dir| dir.is_dir())
}

/// Builds the tickets example (natively, or for `target`) into its own
/// target directory (the test run holds the workspace's); returns the
/// program.
fn build(target: Option<&str>) -> PathBuf {
    let target_dir = root().join("target/wasm-examples");
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "dst-example-tickets",
            "--manifest-path",
        ])
        .arg(root().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .env_remove("RUSTFLAGS");
    if let Some(target) = target {
        cargo.args(["--target", target]);
    }
    let status = cargo.status().expect("run cargo build");
    assert!(
        status.success(),
        "the tickets example builds for {target:?}"
    );
    match target {
        Some(target) => target_dir.join(format!("{target}/release/dst-example-tickets.wasm")),
        None => target_dir.join("release/dst-example-tickets"),
    }
}

/// What must agree between the levels: decisions, their sites' text, the
/// stream consumed, and the outcome (by signature: catalog indices differ).
fn comparable(record: &RunRecord) -> impl PartialEq + std::fmt::Debug + use<> {
    let sites: Vec<(String, u32, u32, Option<String>)> = record
        .events
        .iter()
        .filter_map(|e| match e {
            Event::DecisionSite {
                file,
                line,
                column,
                name,
                ..
            } => Some((file.clone(), *line, *column, name.clone())),
            _ => None,
        })
        .collect();
    (
        record.decisions.clone(),
        sites,
        record.consumed,
        record.trace_hash,
        record.outcome.signature(),
    )
}

fn messages(catalog: &[SiteInfo]) -> Vec<String> {
    let mut messages: Vec<String> = catalog
        .iter()
        .filter(|s| !dst::catalog::is_builtin(&s.message))
        .map(|s| s.message.clone())
        .collect();
    messages.sort();
    messages
}

#[test]
fn the_same_program_decides_and_fails_alike_natively_and_in_wasm() {
    if !wasm_target_installed() {
        eprintln!(
            "skipped: the wasm32-wasip1 target is not installed (rustup target add wasm32-wasip1)"
        );
        return;
    }
    let native = build(None);
    let module = build(Some("wasm32-wasip1"));
    let mut process = Process::new(&native, &[], Duration::from_secs(10)).unwrap();
    let mut wasm = Wasm::load(&module, Options::default()).unwrap();
    assert_eq!(
        messages(process.catalog()),
        messages(wasm.catalog()),
        "the module's dst_catalog section lists the native catalog's properties"
    );
    assert!(messages(wasm.catalog()).contains(&"a seat is sold twice".to_string()));
    let mut failures = 0;
    for seed in 0u64..160 {
        let input = seed.to_le_bytes();
        let there = traced_run(&mut process, &input);
        let here = traced_run(&mut wasm, &input);
        assert!(
            !there.decisions.is_empty(),
            "seed {seed}: the program takes decisions"
        );
        assert_eq!(
            comparable(&there),
            comparable(&here),
            "seed {seed}: native and wasm runs differ"
        );
        if let Some(signature) = here.outcome.signature() {
            assert_eq!(
                signature.to_string(),
                "property \"a customer is charged at most once\" failed",
                "seed {seed}"
            );
            failures += 1;
        }
    }
    assert!(
        failures > 0,
        "some of the seeds find the double charge, at both levels"
    );
}

/// Builds `source` with `compiler` (`flags` on top of `-O1 -pthread`);
/// `None`, saying so, when that compiler is not installed.
fn build_c(compiler: &str, source: &Path, out: &Path, flags: &[&str]) -> Option<PathBuf> {
    let built = Command::new(compiler)
        .args(["-O1", "-pthread"])
        .args(flags)
        .arg(source)
        .arg("-o")
        .arg(out)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("skipped: {compiler} is not installed or failed");
        return None;
    }
    Some(out.to_path_buf())
}

#[test]
fn a_c_service_with_sockets_and_files_ends_alike_natively_and_on_the_emulator() {
    use dst_executors::End;
    use dst_executors::riscv::executor::Emulator;
    // executors/tests/cross/service.c: a TCP server on epoll and a client
    // thread, each request synced to a log before it is answered, UDP, a
    // Unix socket pair, a pipe, a rename; what it learns goes to stdout and
    // to a file. Natively through the process executor (a run without
    // faults) and on the emulator (the nominal input), from one seed folder.
    let dir = std::env::temp_dir().join(format!("dst-cross-service-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let seed = dir.join("seed");
    std::fs::create_dir_all(seed.join("conf")).unwrap();
    std::fs::write(seed.join("conf/greeting"), "hello dst\n").unwrap();
    let source = root().join("executors/tests/cross/service.c");
    let (Some(native), Some(riscv)) = (
        build_c("gcc", &source, &dir.join("native"), &[]),
        build_c(
            "riscv64-linux-gnu-gcc",
            &source,
            &dir.join("riscv"),
            &["-static"],
        ),
    ) else {
        return;
    };

    // Natively: the program works in a copy of the seed folder.
    let work = dir.join("work");
    std::fs::create_dir_all(work.join("conf")).unwrap();
    std::fs::copy(seed.join("conf/greeting"), work.join("conf/greeting")).unwrap();
    let mut process = Process::new(
        &native,
        &[work.clone().into_os_string()],
        Duration::from_secs(20),
    )
    .unwrap();
    process.set_quiet(true);
    assert_eq!(process.execute(&[]), End::Ok);
    let transcript = std::fs::read(work.join("transcript")).unwrap();
    let log = std::fs::read(work.join("data/log")).unwrap();
    let text = String::from_utf8_lossy(&transcript).into_owned();
    assert!(
        text.starts_with("hello dst\nok a\nok b\na=1\neof 0\n") && text.contains("udp 5 dgram"),
        "{text}"
    );
    assert_eq!(log, b"set a 1\nset b 2\nget a\n");

    // On the emulator: the node's file system is a copy of the same folder
    // with its root at "/"; the same stdout, transcript and log, twice.
    let args = ["service".to_string(), "/".to_string()];
    let mut emulator = Emulator::open_with(&riscv, &args, 200_000_000, Some(&seed)).unwrap();
    for _ in 0..2 {
        let end = emulator.execute(&[]);
        let machine = emulator.machine();
        assert_eq!(end, End::Ok, "calls {:?}", machine.calls);
        assert_eq!(String::from_utf8_lossy(&machine.kernel.stdout), text);
        assert_eq!(
            machine.kernel.file_contents("/transcript").as_deref(),
            Some(transcript.as_slice())
        );
        assert_eq!(
            machine.kernel.file_contents("/data/log").as_deref(),
            Some(log.as_slice())
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
