//! What the guest-level tests share: running the driver, a C program with
//! dst.h built natively against libdst (for the process executor), and the
//! check that two executors take the same decisions and end alike, input
//! by input.

#![allow(dead_code)] // each test crate uses a part of it

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dst_executors::Executor;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Points a `cargo dst-fuzz build` (or a command that builds) at one
/// target folder shared by every test that builds a fuzz crate in
/// release, with one profile whichever workspace the crate is in (built
/// once, the others reuse it): no debug information, and unoptimized but
/// for the one crate whose comparisons a test needs as a user's release
/// build has them (examples/cargo-fuzz). Optimized, the explorer's release
/// build was 4.5 minutes of a clean CI's 33; unoptimized it is about 1.5,
/// and still runs the tests' campaigns fast. That crate keeps the release
/// optimization: unoptimized, its 4-byte slice comparison is a call to
/// `bcmp`, not the `u32` comparison that trace-compares sees. Cargo takes the profile from
/// `config_dir/.cargo/config.toml`, written here: the command's working
/// directory must be `config_dir` or a folder below it.
pub fn shared_release_build<'c>(command: &'c mut Command, config_dir: &Path) -> &'c mut Command {
    let folder = config_dir.join(".cargo");
    std::fs::create_dir_all(&folder).unwrap();
    // Tests run at once: each writes its own file, then renames it.
    let partial = folder.join(format!("config.toml.{:?}", std::thread::current().id()));
    std::fs::write(
        &partial,
        "[profile.release]\ndebug = false\nopt-level = 0\n\
         [profile.release.package.dst-example-cargo-fuzz]\nopt-level = 3\n",
    )
    .unwrap();
    std::fs::rename(&partial, folder.join("config.toml")).unwrap();
    command.env("CARGO_TARGET_DIR", root().join("target/fuzz-crates"))
}

/// `cargo dst-fuzz --fuzz-dir DIR ARGS...`.
pub fn driver(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-dst-fuzz"))
        .arg("--fuzz-dir")
        .arg(dir)
        .args(args)
        .env("DST_NO_AFFINITY", "1")
        .output()
        .expect("run cargo-dst-fuzz")
}

/// Standard output, then standard error.
pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Explores the target `level` names (`["--kvm", "guest.elf"]`) with
/// explorer seed 1 until its first finding, which must not be flaky, then
/// replays it, which must fail the same way three times; returns the
/// finding's record and what the replay showed.
pub fn find_and_replay(dir: &Path, level: &[&str], runs: &str) -> (serde_json::Value, String) {
    let mut args = vec!["run"];
    args.extend(level);
    args.extend([
        "--runs",
        runs,
        "--seed",
        "1",
        "--stop-on-finding",
        "--json",
        "--quiet",
    ]);
    let run = driver(dir, &args);
    assert_eq!(run.status.code(), Some(1), "a finding: {}", text(&run));
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let folder = PathBuf::from(summary["findings"][0]["path"].as_str().unwrap());
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(folder.join("finding.json")).unwrap()).unwrap();
    assert_eq!(record["flaky"], false, "{record}");
    let input = folder.join("input");
    let mut args = vec!["replay", input.to_str().unwrap()];
    args.extend(level);
    let replay = driver(dir, &args);
    let shown = text(&replay);
    assert_eq!(replay.status.code(), Some(1), "{shown}");
    assert!(shown.contains("replayed 3 times: identical"), "{shown}");
    (record, shown)
}

/// Builds the fuzzing engine, libdst_engine.a, beside cargo-dst-fuzz.
pub fn build_engine() {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "dst-engine"])
        .current_dir(root())
        .status()
        .unwrap();
    assert!(status.success(), "the fuzzing engine builds");
}

/// `source` built natively against libdst (built first) into `out`.
pub fn native_with_libdst(source: &Path, out: &Path) {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "dst-c"])
        .current_dir(root())
        .status()
        .unwrap();
    assert!(status.success(), "libdst builds");
    let lib = Path::new(env!("CARGO_BIN_EXE_cargo-dst-fuzz"))
        .parent()
        .unwrap()
        .to_path_buf();
    let status = Command::new("cc")
        .args(["-g", "-O1", "-I"])
        .arg(root().join("sdk-c/include"))
        .arg(source)
        .arg("-o")
        .arg(out)
        .arg("-L")
        .arg(&lib)
        .arg("-ldst")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .status()
        .unwrap();
    assert!(status.success(), "the native build of {}", source.display());
}

/// Decisions, their sites' text, the stream consumed and the outcome, as
/// two levels must agree on them.
fn comparable(record: &dst_kernel::RunRecord) -> impl PartialEq + std::fmt::Debug + use<> {
    let sites: Vec<(String, u32, Option<String>)> = record
        .events
        .iter()
        .filter_map(|e| match e {
            dst::region::Event::DecisionSite {
                file, line, name, ..
            } => Some((file.clone(), *line, name.clone())),
            _ => None,
        })
        .collect();
    (
        record.decisions.clone(),
        sites,
        record.consumed,
        record.outcome.signature(),
    )
}

/// The properties of a catalog (not the SDK's own, not faults), by message.
fn messages(catalog: &[dst::catalog::SiteInfo]) -> std::collections::BTreeSet<String> {
    catalog
        .iter()
        .filter(|s| !dst::catalog::is_builtin(&s.message) && s.kind != dst::catalog::Kind::Fault)
        .map(|s| s.message.clone())
        .collect()
}

/// Runs 200 fixed pseudo-random inputs through `native` and `guest`:
/// the catalogs list the same properties, every run takes the same
/// decisions and ends alike, and some fail with `failure` (a signature's
/// text) at both levels.
pub fn same_decisions_and_ends(native: &mut dyn Executor, guest: &mut dyn Executor, failure: &str) {
    assert_eq!(messages(native.catalog()), messages(guest.catalog()));
    assert!(
        !messages(guest.catalog()).is_empty(),
        "{:?}",
        guest.catalog()
    );
    let mut failures = 0;
    for seed in 0u64..200 {
        // A fixed generator: the same inputs on every machine.
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let input: Vec<u8> = (0..24)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect();
        let there = dst_kernel::finding::traced_run(native, &input);
        let here = dst_kernel::finding::traced_run(guest, &input);
        assert!(!there.decisions.is_empty(), "seed {seed}: decisions taken");
        assert_eq!(
            comparable(&there),
            comparable(&here),
            "seed {seed}: the native run and the guest's differ"
        );
        if let Some(signature) = here.outcome.signature() {
            assert_eq!(signature.to_string(), failure, "seed {seed}");
            failures += 1;
        }
    }
    assert!(failures > 0, "some inputs fail, at both levels");
}

/// Builds the fuzzing engine (libdst_engine.a), then
/// `examples/libfuzzer/NAME.c` into `dir` with `cc --libfuzzer`.
pub fn libfuzzer_harness(dir: &Path, name: &str) -> PathBuf {
    build_engine();
    let out = dir.join(name);
    let source = root().join(format!("examples/libfuzzer/{name}.c"));
    let built = driver(
        dir,
        &[
            "cc",
            "--libfuzzer",
            "-o",
            out.to_str().unwrap(),
            source.to_str().unwrap(),
        ],
    );
    assert_eq!(built.status.code(), Some(0), "{}", text(&built));
    out
}
