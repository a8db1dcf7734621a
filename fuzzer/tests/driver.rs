//! `cargo dst-fuzz` end to end: init a fuzz folder in a fresh crate, build
//! its target with edge coverage, explore it; and the driver's errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

/// Where the fresh crates are.
fn crates() -> PathBuf {
    std::env::temp_dir().join(format!("dst-driver-{}", std::process::id()))
}

fn driver(dir: &Path, args: &[&str]) -> Output {
    common::shared_release_build(
        Command::new(env!("CARGO_BIN_EXE_cargo-dst-fuzz"))
            .arg("dst-fuzz")
            .args(args)
            .current_dir(dir),
        &crates(),
    )
    .output()
    .expect("run cargo-dst-fuzz")
}

fn fresh_crate(name: &str) -> PathBuf {
    let dir = crates().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[workspace]\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "pub fn answer() -> u64 { 42 }\n").unwrap();
    dir
}

fn one_line(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let last = stderr.lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("cargo dst-fuzz: "), "{stderr}");
    last
}

#[test]
fn init_builds_with_coverage_and_explores() {
    let dir = fresh_crate("tiny_store");
    let init = driver(&dir, &["init"]);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    assert!(dir.join("fuzz/fuzz_targets/example.rs").exists());

    let again = driver(&dir, &["init"]);
    assert_eq!(again.status.code(), Some(5), "init refuses to overwrite");
    assert!(one_line(&again).contains("already exists"));

    let list = driver(&dir, &["list"]);
    assert_eq!(String::from_utf8_lossy(&list.stdout).trim(), "example");

    let run = driver(
        &dir,
        &["run", "example", "--runs", "5000", "--json", "--quiet"],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(
        run.status.code(),
        Some(0),
        "no finding in the example: {stderr}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&run.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(summary["executions"].as_u64().unwrap() >= 5000);
    assert!(
        summary["edges"].as_u64().unwrap() > 0,
        "the user's crate is instrumented: {summary}"
    );
    let properties = summary["properties"].as_array().unwrap();
    let status = |m: &str| {
        properties
            .iter()
            .find(|p| p["message"] == m)
            .map(|p| p["status"].clone())
    };
    assert_eq!(
        status("the store respects its capacity"),
        Some("passing".into())
    );
    assert_eq!(status("the store fills up"), Some("passing".into()));
    assert!(dir.join("fuzz/corpus/example").read_dir().unwrap().count() > 0);
    assert!(dir.join("fuzz/campaigns/example.json").exists());

    let report = driver(&dir, &["report", "example"]);
    assert!(String::from_utf8_lossy(&report.stdout).contains("\"the store fills up\""));

    // A target whose setup (before the closure) panics.
    std::fs::write(
        dir.join("fuzz/fuzz_targets/boom.rs"),
        "dst_fuzz::target!({\n    let config: u64 = std::env::var(\"NO_SUCH_VARIABLE\").expect(\"no config\").parse().unwrap();\n    move || { dst::assert_always!(config > 0, \"config is positive\"); }\n});\n",
    )
    .unwrap();
    let mut manifest = std::fs::read_to_string(dir.join("fuzz/Cargo.toml")).unwrap();
    manifest = manifest.replace(
        "# The fuzz crate",
        "[[bin]]\nname = \"boom\"\npath = \"fuzz_targets/boom.rs\"\ntest = false\n\n# The fuzz crate",
    );
    std::fs::write(dir.join("fuzz/Cargo.toml"), manifest).unwrap();
    let boom = driver(&dir, &["run", "boom", "--runs", "10"]);
    assert_eq!(boom.status.code(), Some(6));
    assert!(one_line(&boom).contains("died before the explorer finished (exit status 101)"));
}

#[test]
fn an_unknown_target_is_exit_3() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = driver(&repo, &["run", "nosuch", "--fuzz-dir", "examples/bank"]);
    assert_eq!(output.status.code(), Some(3));
    assert!(one_line(&output).contains("no target \"nosuch\""));
    let nowhere = driver(&repo, &["list", "--fuzz-dir", "no/such/dir"]);
    assert_eq!(nowhere.status.code(), Some(3));
    assert!(one_line(&nowhere).contains("cargo dst-fuzz init"));
}

#[test]
fn the_catalog_of_a_c_object_is_read_from_its_section() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let object = std::env::temp_dir().join(format!("dst-catalog-{}.o", std::process::id()));
    let status = Command::new("cc")
        .args(["-std=c11", "-c", "-o"])
        .arg(&object)
        .arg(repo.join("sdk-c/tests/c/basic.c"))
        .arg("-I")
        .arg(repo.join("sdk-c/include"))
        .status()
        .unwrap();
    assert!(status.success());
    let output = driver(&repo, &["catalog", object.to_str().unwrap(), "--json"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sites: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
    let messages: Vec<&str> = sites
        .iter()
        .map(|s| s["message"].as_str().unwrap())
        .collect();
    // The SDK's own properties (deadlock, ...) come first, as libdst
    // registers them.
    assert!(
        messages[..3].iter().all(|m| m.starts_with("dst: ")),
        "{messages:?}"
    );
    assert_eq!(
        messages[3..],
        [
            "a C sometimes nobody reaches",
            "below stays in range",
            "a C always that fails",
            "the coin lands heads",
            "the C program runs",
            "n is sometimes large",
            "n is at most 99",
        ]
    );
    assert_eq!(sites[3]["kind"], "sometimes");
    assert_eq!(sites[8]["kind"], "sometimes_greater_than");
    assert!(
        sites[4]["location"]["file"]
            .as_str()
            .unwrap()
            .ends_with("basic.c")
    );
    assert_eq!(sites[4]["location"]["line"], 14);

    let garbage = driver(&repo, &["catalog", "Cargo.toml"]);
    assert_eq!(garbage.status.code(), Some(4));
    assert!(one_line(&garbage).contains("not an ELF file"));
}
