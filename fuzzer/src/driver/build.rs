//! Building targets: the fuzz crate's binaries, found through `cargo
//! metadata` and built by cargo with this binary as `RUSTC_WRAPPER`, which
//! adds sanitizer-coverage flags to the user's crates only.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::exit;
use crate::exit::Failure;

/// Flags that give a crate LLVM's inline 8-bit edge counters, and its
/// integer comparisons to the comparison log (`dst::cmplog`'s callbacks).
pub const SANCOV_FLAGS: &[&str] = &[
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=3",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-trace-compares",
];

/// dst's own crates, never instrumented.
pub const DST_CRATES: &[&str] = &[
    "dst",
    "dst_kernel",
    "dst_executors",
    "dst_fuzz",
    "dst_c",
    "dst_oracles",
];

/// The fuzz crate: a Cargo package whose binaries are targets.
pub struct FuzzCrate {
    pub dir: PathBuf,
}

impl FuzzCrate {
    /// The corpus folder of target `name`.
    pub fn corpus(&self, name: &str) -> PathBuf {
        self.dir.join("corpus").join(name)
    }

    /// The findings folder of target `name`.
    pub fn findings(&self, name: &str) -> PathBuf {
        self.dir.join("findings").join(name)
    }

    pub fn manifest(&self) -> PathBuf {
        self.dir.join("Cargo.toml")
    }

    pub fn metadata(&self) -> Result<serde_json::Value, Failure> {
        let manifest = self.manifest();
        if !manifest.exists() {
            return Err(Failure::new(
                exit::UNKNOWN_TARGET,
                format!(
                    "no fuzz crate at {} (create one with `cargo dst-fuzz init`, or pass --fuzz-dir)",
                    manifest.display()
                ),
            ));
        }
        metadata(&manifest)
    }

    /// The binary targets of the fuzz crate.
    pub fn targets(&self) -> Result<Vec<String>, Failure> {
        let metadata = self.metadata()?;
        let package = package_of(&metadata, &self.manifest())?;
        let mut names = Vec::new();
        for target in package["targets"].as_array().into_iter().flatten() {
            let is_bin = target["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"));
            if is_bin && let Some(name) = target["name"].as_str() {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Builds target `name` with coverage; returns the binary's path.
    pub fn build(&self, name: &str) -> Result<PathBuf, Failure> {
        let targets = self.targets()?;
        if !targets.iter().any(|t| t == name) {
            return Err(Failure::new(
                exit::UNKNOWN_TARGET,
                format!(
                    "no target {name:?} in {} (targets: {})",
                    self.manifest().display(),
                    if targets.is_empty() {
                        "none".to_string()
                    } else {
                        targets.join(", ")
                    }
                ),
            ));
        }
        let metadata = self.metadata()?;
        let target_dir = PathBuf::from(metadata["target_directory"].as_str().ok_or(
            Failure::new(exit::INTERNAL, "cargo metadata has no target_directory"),
        )?)
        .join("dst-fuzz");
        let me = std::env::current_exe().map_err(|e| {
            Failure::new(exit::INTERNAL, format!("cannot find this executable: {e}"))
        })?;
        let status = Command::new(cargo())
            .args(["build", "--release", "--manifest-path"])
            .arg(self.manifest())
            .args(["--bin", name])
            .env("RUSTC_WRAPPER", &me)
            .env("DST_FUZZ_RUSTC_WRAPPER", "1")
            .env("CARGO_TARGET_DIR", &target_dir)
            .status()
            .map_err(|e| Failure::new(exit::INTERNAL, format!("cannot run cargo build: {e}")))?;
        if !status.success() {
            return Err(Failure::new(
                exit::BUILD_FAILED,
                format!("target {name} did not build"),
            ));
        }
        Ok(target_dir.join("release").join(name))
    }

    /// The campaign file of target `name`.
    pub fn campaign(&self, name: &str) -> PathBuf {
        self.dir.join("campaigns").join(format!("{name}.json"))
    }

    /// The corpus, findings and campaign paths of target `name`.
    pub fn paths(&self, name: &str) -> Vec<OsString> {
        vec![
            "--corpus".into(),
            self.corpus(name).into(),
            "--findings".into(),
            self.findings(name).into(),
            "--campaign".into(),
            self.campaign(name).into(),
        ]
    }
}

/// `cargo metadata` of the package at `manifest`.
pub fn metadata(manifest: &Path) -> Result<serde_json::Value, Failure> {
    let output = Command::new(cargo())
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .map_err(|e| Failure::new(exit::INTERNAL, format!("cannot run cargo metadata: {e}")))?;
    if !output.status.success() {
        return Err(Failure::new(
            exit::BUILD_FAILED,
            format!(
                "cargo metadata failed for {}: {}",
                manifest.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| {
        Failure::new(
            exit::INTERNAL,
            format!("cargo metadata printed no JSON: {e}"),
        )
    })
}

/// The package of `metadata` whose manifest is `manifest`.
pub fn package_of<'a>(
    metadata: &'a serde_json::Value,
    manifest: &Path,
) -> Result<&'a serde_json::Value, Failure> {
    let manifest = manifest
        .canonicalize()
        .map_err(|e| Failure::new(exit::BAD_INPUT, format!("{}: {e}", manifest.display())))?;
    metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["manifest_path"].as_str().map(Path::new) == Some(manifest.as_path()))
        .ok_or(Failure::new(
            exit::BAD_INPUT,
            format!("{} is a workspace without a package", manifest.display()),
        ))
}

fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Whether the rustc invocation `args` (without rustc itself) compiles one
/// of the user's crates, to be instrumented: not a build script, a proc
/// macro, a registry or git crate, or one of dst's own.
pub fn instruments(args: &[String]) -> bool {
    let crate_name = args
        .iter()
        .position(|a| a == "--crate-name")
        .and_then(|i| args.get(i + 1));
    let proc_macro = args
        .windows(2)
        .any(|w| w[0] == "--crate-type" && w[1] == "proc-macro");
    let source = args.iter().find(|a| a.ends_with(".rs"));
    let from_registry = source.is_some_and(|s| {
        s.contains("/.cargo/registry/")
            || s.contains("/.cargo/git/")
            || s.contains("/registry/src/")
    });
    match crate_name {
        Some(name) => {
            !name.starts_with("build_script")
                && !proc_macro
                && !from_registry
                && !DST_CRATES.contains(&name.as_str())
        }
        None => false,
    }
}

/// The rustc wrapper: compiles one crate (`args`: rustc and its
/// arguments), instrumented if it is the user's; returns rustc's status.
pub fn rustc_wrapper(args: &[OsString]) -> i32 {
    let Some((rustc, rest)) = args.split_first() else {
        eprintln!("cargo dst-fuzz: the rustc wrapper was called without rustc");
        return exit::USAGE;
    };
    let text: Vec<String> = rest
        .iter()
        .map(|a| a.to_string_lossy().to_string())
        .collect();
    let instrument = instruments(&text);
    if std::env::var_os("DST_FUZZ_WRAPPER_LOG").is_some()
        && let Some(i) = text.iter().position(|a| a == "--crate-name")
    {
        let verb = if instrument {
            "instrumenting"
        } else {
            "compiling"
        };
        eprintln!(
            "cargo dst-fuzz: {verb} {}",
            text.get(i + 1).map_or("?", |n| n.as_str())
        );
    }
    let mut cmd = Command::new(rustc);
    cmd.args(rest);
    if instrument {
        cmd.args(SANCOV_FLAGS);
    }
    match cmd.status() {
        Ok(status) => status.code().unwrap_or(1),
        Err(e) => {
            eprintln!(
                "cargo dst-fuzz: cannot run {}: {e}",
                rustc.to_string_lossy()
            );
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &str) -> Vec<String> {
        words.split(' ').map(String::from).collect()
    }

    #[test]
    fn only_the_users_crates_are_instrumented() {
        assert!(instruments(&args(
            "--crate-name bank --edition=2024 src/lib.rs"
        )));
        assert!(instruments(&args(
            "--crate-name bank_fuzz fuzz_targets/t.rs"
        )));
        for not in [
            "--crate-name dst_kernel kernel/src/lib.rs",
            "--crate-name dst kernel/src/lib.rs",
            "--crate-name build_script_build build.rs",
            "--crate-name serde_derive --crate-type proc-macro src/lib.rs",
            "--crate-name libc /root/.cargo/registry/src/index/libc-0.2/src/lib.rs",
            "--crate-name x /home/u/.cargo/git/checkouts/x/src/lib.rs",
            "-vV",
        ] {
            assert!(!instruments(&args(not)), "{not}");
        }
    }
}
