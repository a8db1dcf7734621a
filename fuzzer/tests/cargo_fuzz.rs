//! `cargo dst-fuzz init --from-cargo-fuzz` on a cargo-fuzz crate
//! (examples/cargo-fuzz/original): the targets come out as the ported
//! example crate has them (examples/cargo-fuzz, explored by its own
//! tests), only their import changed; the manifest depends on dst; corpus
//! files and crash artifacts become dst inputs of the same bytes; the
//! originals are kept, and a second conversion is refused.

mod common;
#[path = "../../examples/common/explorer.rs"]
mod explorer;

use std::path::{Path, PathBuf};
use std::process::Command;

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn a_cargo_fuzz_crate_converts_to_the_ported_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let original = root.join("examples/cargo-fuzz/original");
    let dir = std::env::temp_dir().join(format!("dst-from-cargo-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_tree(&original, &dir);
    let convert = || {
        Command::new(env!("CARGO_BIN_EXE_cargo-dst-fuzz"))
            .args(["dst-fuzz", "init", "--from-cargo-fuzz"])
            .arg(&dir)
            .output()
            .unwrap()
    };
    let output = convert();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // The targets: exactly the ported example's sources.
    for name in ["magic.rs", "record.rs", "transfers.rs"] {
        let converted = std::fs::read_to_string(dir.join("fuzz_targets").join(name)).unwrap();
        let ported =
            std::fs::read_to_string(root.join("examples/cargo-fuzz/fuzz_targets").join(name))
                .unwrap();
        assert_eq!(converted, ported, "{name}");
        assert!(converted.contains("#![no_main]"));
        let before = std::fs::read_to_string(original.join("fuzz_targets").join(name)).unwrap();
        let changed = before
            .lines()
            .zip(converted.lines())
            .filter(|(a, b)| a != b)
            .count();
        assert!(
            (1..=2).contains(&changed),
            "{name}: {changed} lines changed"
        );
    }
    // The manifest: dst's crates for libfuzzer-sys, the rest unchanged.
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(!manifest.contains("libfuzzer-sys"), "{manifest}");
    let sdk = root.join("sdk");
    let fuzzer = root.join("fuzzer");
    assert!(
        manifest.contains(&format!("dst = {{ path = \"{}\" }}", sdk.display())),
        "{manifest}"
    );
    assert!(
        manifest.contains(&format!("dst-fuzz = {{ path = \"{}\" }}", fuzzer.display())),
        "{manifest}"
    );
    assert!(
        manifest.contains("path = \"fuzz_targets/transfers.rs\""),
        "{manifest}"
    );
    // The corpus: every corpus file and the crash artifact, as dst inputs.
    let mut inputs: Vec<Vec<u8>> = files(&dir.join("corpus/record"))
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    inputs.sort();
    let mut expected: Vec<Vec<u8>> = [&b""[..], b"K\x03abc", b"K\x09abc"]
        .iter()
        .map(|d| dst::libfuzzer::encode(d))
        .collect();
    expected.sort();
    assert_eq!(inputs, expected);
    // The originals, kept.
    let backup = dir.join("cargo-fuzz-backup");
    assert_eq!(
        std::fs::read(backup.join("Cargo.toml")).unwrap(),
        std::fs::read(original.join("Cargo.toml")).unwrap()
    );
    assert_eq!(files(&backup.join("corpus/record")).len(), 2);
    assert_eq!(files(&backup.join("artifacts/record")).len(), 1);
    assert_eq!(files(&backup.join("fuzz_targets")).len(), 3);

    // Again: refused, nothing touched.
    let again = convert();
    assert_eq!(
        again.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("Cargo.toml")).unwrap(),
        manifest
    );
}

#[test]
fn a_folder_without_libfuzzer_sys_is_refused_and_left_alone() {
    let dir = std::env::temp_dir().join(format!("dst-not-cargo-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = "[package]\nname = \"x\"\nversion = \"0.0.0\"\n";
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_cargo-dst-fuzz"))
        .args(["dst-fuzz", "init", "--from-cargo-fuzz"])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("no libfuzzer-sys dependency"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.join("Cargo.toml")).unwrap(),
        manifest
    );
    assert!(!dir.join("cargo-fuzz-backup").exists());
}

/// `magic` of examples/cargo-fuzz built by `cargo dst-fuzz build` (edge
/// counters and `-sanitizer-coverage-trace-compares`), explored from seed
/// 1 for `runs` runs with `flags`: the executions at its first finding.
fn magic_found_at(binary: &Path, runs: &str, flags: &[&str]) -> Option<u64> {
    let mut args = vec!["--runs", runs, "--seed", "1", "--stop-on-finding"];
    args.extend(flags);
    let tag = format!("magic-{}", flags.len());
    let campaign = explorer::Campaign::run(binary.to_str().unwrap(), &tag, &args);
    let finding = campaign.summary["findings"]
        .as_array()
        .unwrap()
        .first()?
        .clone();
    assert!(
        finding["signature"]["at"]
            .as_str()
            .unwrap()
            .contains("magic.rs"),
        "{finding}"
    );
    finding["executions"].as_u64()
}

#[test]
fn comparison_feedback_finds_the_rust_magic_that_mutation_alone_does_not() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let crates = root.join("target/fuzz-crates");
    let output = common::shared_release_build(
        Command::new(env!("CARGO_BIN_EXE_cargo-dst-fuzz"))
            .arg("--fuzz-dir")
            .arg(root.join("examples/cargo-fuzz"))
            .args(["build", "magic"])
            .current_dir(&crates),
        &crates,
    )
    .output()
    .unwrap();
    assert!(output.status.success(), "{}", common::text(&output));
    let binary = root.join("target/fuzz-crates/dst-fuzz/release/magic");
    // The magic (compared as one u32) and the version (a u16) reach the
    // comparison log; input-to-state writes them where the input had its
    // bytes. About 7,500 executions for seeds 1 to 3 (docs/benchmarks.md).
    let with = magic_found_at(&binary, "100000", &[]);
    assert!(with.is_some(), "comparison feedback finds the bug");
    // Without it, 2^48 values stand between the mutator and the bug.
    let without = magic_found_at(&binary, "20000", &["--no-cmplog"]);
    assert_eq!(without, None, "mutation alone does not");
}
