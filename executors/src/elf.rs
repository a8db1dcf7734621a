//! dst's one reader of binaries, and the catalog of a program.
//!
//! Every ELF (or other object file) dst reads is parsed by [`parse`]: the
//! emulator's and the KVM executor's loaders, the catalog reader, the
//! symbolizer (for each mapped file's segments; its DWARF lines are
//! `addr2line`'s), the unwinder and the driver's token reader, each from
//! one parse per binary and executor.
//!
//! The catalog of a program: for C and C++, the records of its
//! `dst_catalog` section (format: `dst::catalog::c`), read from the file
//! without running it; for a Rust binary using the `dst` crate, whose
//! link-time catalog holds pointers, asked of the program itself
//! (`dst::forkserver::CATALOG_OUT_ENV`: it answers before `main`).

use std::path::Path;

use dst::catalog::{SiteInfo, c};
use object::{Object, ObjectSection};

/// Every assertion site in the `dst_catalog` section of the ELF file at
/// `path` (an executable, shared object or object file).
pub fn catalog(path: &Path) -> Result<Vec<SiteInfo>, String> {
    let bytes = read(path)?;
    section_catalog(&parse_at(path, &bytes)?, path)
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// The object file in `bytes`, or why it is none (one line).
pub fn parse(bytes: &[u8]) -> Result<object::File<'_>, String> {
    object::File::parse(bytes).map_err(|e| format!("not an ELF file: {e}"))
}

/// [`parse`], its error naming `path`.
fn parse_at<'a>(path: &Path, bytes: &'a [u8]) -> Result<object::File<'a>, String> {
    parse(bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn section_catalog(file: &object::File<'_>, path: &Path) -> Result<Vec<SiteInfo>, String> {
    let Some(section) = file.section_by_name("dst_catalog") else {
        return Ok(Vec::new());
    };
    let data = section.data().map_err(|e| {
        format!(
            "cannot read the dst_catalog section of {}: {e}",
            path.display()
        )
    })?;
    // libdst registers the SDK's own sites first, then the section's.
    let builtin = dst::catalog::BUILTIN.iter().enumerate().map(|(i, site)| {
        let mut info = site.info();
        info.index = i as u32;
        info
    });
    let offset = dst::catalog::BUILTIN.len();
    Ok(builtin
        .chain(
            c::parse(data)
                .iter()
                .enumerate()
                .map(|(i, record)| record.info((offset + i) as u32)),
        )
        .collect())
}

/// The catalog of a guest program (the emulator's, the KVM executor's):
/// the SDK's own properties, which the executor checks (deadlock), then
/// the records of its `dst_catalog` section, if it has one.
pub fn guest_catalog(file: &object::File<'_>) -> Result<Vec<SiteInfo>, String> {
    let sites = section_catalog(file, Path::new("the program"))?;
    if !sites.is_empty() {
        return Ok(sites);
    }
    Ok(dst::catalog::BUILTIN
        .iter()
        .enumerate()
        .map(|(i, site)| {
            let mut info = site.info();
            info.index = i as u32;
            info
        })
        .collect())
}

/// The catalog of the program at `path`: its `dst_catalog` section when it
/// has one, else what the program reports when asked (a Rust binary using
/// the `dst` crate); empty for a program without the SDK.
pub fn program_catalog(path: &Path) -> Result<Vec<SiteInfo>, String> {
    let bytes = read(path)?;
    let file = parse_at(path, &bytes)?;
    let sites = section_catalog(&file, path)?;
    if !sites.is_empty() || file.section_by_name("linkme_CATALOG").is_none() {
        return Ok(sites);
    }
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!("dst-catalog-{}-{n}.json", std::process::id()));
    let status = std::process::Command::new(path)
        .env(dst::forkserver::CATALOG_OUT_ENV, &out)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
    let text = std::fs::read(&out);
    let _ = std::fs::remove_file(&out);
    match text {
        Ok(text) if status.success() => serde_json::from_slice(&text)
            .map_err(|e| format!("{} reported a bad catalog: {e}", path.display())),
        _ => Err(format!(
            "{} did not report its catalog ({status}): does it link the dst crate?",
            path.display()
        )),
    }
}
