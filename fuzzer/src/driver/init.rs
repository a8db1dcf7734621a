//! `cargo dst-fuzz init`: a fuzz crate with one example target.

use std::path::{Path, PathBuf};

use super::Failure;
use crate::exit;

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
        return Err((
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
        return Err((
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
                (
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
