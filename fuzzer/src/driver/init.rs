//! `cargo dst-fuzz init`: a fuzz crate with one example target; with
//! `--from-cargo-fuzz DIR`, a cargo-fuzz crate converted in place.

use std::path::{Path, PathBuf};

use crate::exit;
use crate::exit::Failure;

/// The example target `init` writes.
pub const EXAMPLE_TARGET: &str = r#"//! An example dst target. Replace the body with a test of your crate: take
//! every random choice through `dst::random`, inject faults with `dst::fault!`,
//! and state what must hold with `dst::assert_*!`.

dst_fuzz::target!(|| {
    let capacity = 1 + dst::random::below(8);
    let mut stored = Vec::new();
    for _ in 0..16 {
        if dst::fault!("the write is lost") {
            continue;
        }
        if stored.len() < capacity as usize {
            stored.push(dst::random::u64());
        }
    }
    dst::assert_sometimes!(stored.len() as u64 == capacity, "the store fills up");
    dst::assert_always!(stored.len() as u64 <= capacity, "the store respects its capacity");
});
"#;

/// The fuzz crate's manifest for the crate `name`, with dst's crates from
/// `dst_root`.
pub fn manifest(name: &str, dst_root: &Path) -> String {
    format!(
        r#"[package]
name = "{name}-fuzz"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
{name} = {{ path = ".." }}
dst = {{ path = "{sdk}" }}
dst-fuzz = {{ path = "{fuzzer}" }}

[[bin]]
name = "example"
path = "fuzz_targets/example.rs"
test = false
doc = false

# The fuzz crate is its own workspace, as with cargo-fuzz.
[workspace]
"#,
        sdk = dst_root.join("sdk").display(),
        fuzzer = dst_root.join("fuzzer").display(),
    )
}

/// Creates `fuzz/` in the crate at `path`, with one example target.
pub fn init(path: &Path) -> Result<i32, Failure> {
    let manifest = path.join("Cargo.toml");
    if !manifest.exists() {
        return Err(Failure::new(
            exit::BAD_INPUT,
            format!("no crate at {}: Cargo.toml is missing", path.display()),
        ));
    }
    let metadata = super::build::metadata(&manifest)?;
    let name = super::build::package_of(&metadata, &manifest)?["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let fuzz = path.join("fuzz");
    if fuzz.join("Cargo.toml").exists() {
        return Err(Failure::new(
            exit::UNWRITABLE,
            format!(
                "{} already exists; not touching it",
                fuzz.join("Cargo.toml").display()
            ),
        ));
    }
    let dst_root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("dst-fuzz lives in the dst repository")
        .to_path_buf();
    let cargo_toml = self::manifest(&name, &dst_root);
    let write = |p: PathBuf, contents: &str| {
        std::fs::create_dir_all(p.parent().expect("a file in a folder"))
            .and_then(|_| std::fs::write(&p, contents))
            .map_err(|e| {
                Failure::new(
                    exit::UNWRITABLE,
                    format!("cannot write {}: {e}", p.display()),
                )
            })
    };
    write(fuzz.join("Cargo.toml"), &cargo_toml)?;
    write(fuzz.join("fuzz_targets").join("example.rs"), EXAMPLE_TARGET)?;
    write(fuzz.join(".gitignore"), "target\ncorpus\ncampaigns\n")?;
    // Start from the versions dst was tested with (cargo adds and drops
    // entries for the user's own dependencies).
    if let Ok(lock) = std::fs::read_to_string(dst_root.join("Cargo.lock")) {
        write(fuzz.join("Cargo.lock"), &lock)?;
    }
    println!(
        "created {} with target `example`; run it with `cargo dst-fuzz run example`",
        fuzz.display()
    );
    Ok(exit::OK)
}

/// What `init --from-cargo-fuzz` changes in a target's source: every path
/// through `libfuzzer_sys` goes through `dst_fuzz` (`fuzz_target!`,
/// `arbitrary`); the rest of the file, `#![no_main]` included, stays.
/// Errors name what dst does not provide.
pub fn convert_source(text: &str) -> Result<String, String> {
    for unsupported in ["fuzz_mutator!", "fuzz_crossover!", "Corpus::"] {
        if text.contains(unsupported) {
            return Err(format!(
                "uses libfuzzer-sys's {} which dst-fuzz does not provide",
                unsupported.trim_end_matches(['!', ':'])
            ));
        }
    }
    Ok(text.replace("libfuzzer_sys::", "dst_fuzz::"))
}

/// The manifest of a converted cargo-fuzz crate: its `libfuzzer-sys`
/// dependency (a `name = ...` line or a `[dependencies.libfuzzer-sys]`
/// table) becomes dst's two crates from `dst_root`; every other line stays.
pub fn convert_manifest(text: &str, dst_root: &Path) -> Result<String, String> {
    let sdk = dst_root.join("sdk");
    let fuzzer = dst_root.join("fuzzer");
    let inline = format!(
        "dst = {{ path = \"{}\" }}\ndst-fuzz = {{ path = \"{}\" }}",
        sdk.display(),
        fuzzer.display()
    );
    let tables = format!(
        "[dependencies.dst]\npath = \"{}\"\n\n[dependencies.dst-fuzz]\npath = \"{}\"",
        sdk.display(),
        fuzzer.display()
    );
    let mut out = Vec::new();
    let mut replaced = false;
    let mut skipping = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if skipping {
            if !trimmed.starts_with('[') {
                continue;
            }
            skipping = false;
        }
        let key = trimmed.split(['=', ' ', '\t']).next().unwrap_or_default();
        if (key == "libfuzzer-sys" || key == "\"libfuzzer-sys\"") && trimmed.contains('=') {
            out.push(inline.clone());
            replaced = true;
        } else if trimmed.replace(' ', "") == "[dependencies.libfuzzer-sys]" {
            out.push(tables.clone());
            out.push(String::new());
            replaced = true;
            skipping = true;
        } else {
            out.push(line.to_string());
        }
    }
    if !replaced {
        return Err("it has no libfuzzer-sys dependency: not a cargo-fuzz crate".into());
    }
    let mut text = out.join("\n");
    text.push('\n');
    Ok(text)
}

/// `init --from-cargo-fuzz DIR`: converts the cargo-fuzz crate in `DIR`
/// (its `fuzz/` folder) in place. Its manifest and target sources are
/// rewritten ([`convert_manifest`], [`convert_source`]); every corpus
/// file (`corpus/NAME/*`) and crash artifact (`artifacts/NAME/*`) becomes a
/// dst input of the same harness bytes in `corpus/NAME`
/// (`dst::libfuzzer::encode`), so `ci` replays them first. The originals
/// are kept in `DIR/cargo-fuzz-backup/`; a folder that has one was
/// converted already and is refused. Every file is written to a temporary
/// file and renamed.
pub fn from_cargo_fuzz(dir: &Path) -> Result<i32, Failure> {
    let manifest_path = dir.join("Cargo.toml");
    let manifest = std::fs::read_to_string(&manifest_path).map_err(|e| {
        Failure::new(
            exit::BAD_INPUT,
            format!("cannot read {}: {e}", manifest_path.display()),
        )
    })?;
    let backup = dir.join("cargo-fuzz-backup");
    if backup.exists() {
        return Err(Failure::new(
            exit::UNWRITABLE,
            format!(
                "{} exists: {} was converted already; not touching it",
                backup.display(),
                dir.display()
            ),
        ));
    }
    let bad = |what: &Path, why: String| {
        Failure::new(exit::BAD_INPUT, format!("{}: {why}", what.display()))
    };
    let dst_root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("dst-fuzz lives in the dst repository")
        .to_path_buf();
    let converted = convert_manifest(&manifest, &dst_root).map_err(|e| bad(&manifest_path, e))?;
    // Every source under fuzz_targets/ (and any [[bin]] path elsewhere).
    let mut sources: Vec<PathBuf> = std::fs::read_dir(dir.join("fuzz_targets"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    for line in manifest.lines() {
        if let Some(path) = line.trim().strip_prefix("path")
            && let Some(path) = path.trim_start().strip_prefix('=')
        {
            let path = dir.join(path.trim().trim_matches('"'));
            if path.extension().is_some_and(|x| x == "rs") && !sources.contains(&path) {
                sources.push(path);
            }
        }
    }
    sources.sort();
    let mut rewritten = Vec::new();
    for source in &sources {
        let text = std::fs::read_to_string(source)
            .map_err(|e| bad(source, format!("cannot read it: {e}")))?;
        rewritten.push((source, convert_source(&text).map_err(|e| bad(source, e))?));
    }
    // Everything is checked: now write, originals first.
    let unwritable = |p: &Path, e: std::io::Error| {
        Failure::new(
            exit::UNWRITABLE,
            format!("cannot write {}: {e}", p.display()),
        )
    };
    let keep = |from: &Path| -> Result<(), Failure> {
        let relative = from.strip_prefix(dir).unwrap_or(from);
        let to = backup.join(relative);
        std::fs::create_dir_all(to.parent().expect("a file in a folder"))
            .and_then(|_| std::fs::copy(from, &to).map(|_| ()))
            .map_err(|e| unwritable(&to, e))
    };
    keep(&manifest_path)?;
    for source in &sources {
        keep(source)?;
    }
    let write =
        |p: &Path, bytes: &[u8]| dst_kernel::write_atomic(p, bytes).map_err(|e| unwritable(p, e));
    write(&manifest_path, converted.as_bytes())?;
    for (source, text) in &rewritten {
        write(source, text.as_bytes())?;
    }
    let mut inputs = 0;
    for folder in ["corpus", "artifacts"] {
        for target in std::fs::read_dir(dir.join(folder))
            .into_iter()
            .flatten()
            .flatten()
        {
            if !target.path().is_dir() {
                continue;
            }
            let corpus = dir.join("corpus").join(target.file_name());
            let mut files: Vec<PathBuf> = std::fs::read_dir(target.path())
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            for file in files {
                let data =
                    std::fs::read(&file).map_err(|e| bad(&file, format!("cannot read it: {e}")))?;
                keep(&file)?;
                if folder == "corpus" {
                    std::fs::remove_file(&file).map_err(|e| unwritable(&file, e))?;
                }
                if data.len() > dst::libfuzzer::max_len() {
                    eprintln!(
                        "dst-fuzz: {} is {} bytes, longer than max_len {} (set {} to keep it whole)",
                        file.display(),
                        data.len(),
                        dst::libfuzzer::max_len(),
                        dst::libfuzzer::MAX_LEN_ENV
                    );
                }
                let input = dst::libfuzzer::encode(&data);
                std::fs::create_dir_all(&corpus).map_err(|e| unwritable(&corpus, e))?;
                write(&corpus.join(crate::store::corpus_name(&input)), &input)?;
                inputs += 1;
            }
        }
    }
    println!(
        "converted {}: {} target source(s), {inputs} corpus and artifact file(s) as dst inputs; the originals are in {}",
        dir.display(),
        rewritten.len(),
        backup.display()
    );
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_depends_on_the_crate_and_on_dst() {
        let text = manifest("bank", Path::new("/src/dst"));
        assert!(text.contains("name = \"bank-fuzz\""));
        assert!(text.contains("bank = { path = \"..\" }"));
        assert!(text.contains("dst = { path = \"/src/dst/sdk\" }"));
        assert!(text.contains("dst-fuzz = { path = \"/src/dst/fuzzer\" }"));
        assert!(text.contains("path = \"fuzz_targets/example.rs\""));
        assert!(text.contains("[workspace]"), "its own workspace");
        assert!(EXAMPLE_TARGET.contains("dst_fuzz::target!"));
    }
}
