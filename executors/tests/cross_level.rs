//! Cross-level replay: one Rust program with dst assertions and decisions
//! (examples/wasm/tickets), built natively and for wasm32-wasip1, run by the
//! process executor and by the wasm executor, takes the same decisions
//! (kind, site, value, stream offset), names the same decision sites and
//! ends the same way for the same input bytes.

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
