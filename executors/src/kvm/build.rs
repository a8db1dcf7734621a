//! Building a guest: the host's C compiler, freestanding x86-64 flags, the
//! guest runtime (`sdk-c/guest/dst_kvm.c`, compiled without coverage: its
//! coverage callback must not call itself, and the dst-core crate, which
//! writes the region, compiled by `rustc` into a static library:
//! [`build_core`]) and linker script
//! (`sdk-c/guest/kvm.ld`), `dst.h` on the include path, trace-pc edge
//! coverage of the program's own code. The runtime's sources are compiled
//! into this crate, so a build needs no source tree; the region's layout
//! it includes (`dst_region.h`, [`region_header`]) is made from the `dst`
//! crate's types at each build.
//! `cargo dst-fuzz cc --kvm` and the benchmark build with it.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, ExitStatus};

const DST_H: &str = include_str!("../../../sdk-c/include/dst.h");
const RUNTIME: &str = include_str!("../../../sdk-c/guest/dst_kvm.c");
const LINKER_SCRIPT: &str = include_str!("../../../sdk-c/guest/kvm.ld");
/// The dst-core crate's sources: the protocol's writes, compiled into
/// every guest ([`build_core`]).
const CORE: [(&str, &str); 6] = [
    ("lib.rs", include_str!("../../../sdk/core/src/lib.rs")),
    (
        "decision.rs",
        include_str!("../../../sdk/core/src/decision.rs"),
    ),
    ("guest.rs", include_str!("../../../sdk/core/src/guest.rs")),
    ("hash.rs", include_str!("../../../sdk/core/src/hash.rs")),
    ("kind.rs", include_str!("../../../sdk/core/src/kind.rs")),
    ("region.rs", include_str!("../../../sdk/core/src/region.rs")),
];

/// Flags of every guest object: no libc, no PIC, nothing that needs a
/// runtime the guest lacks; unused functions dropped at link time, so the
/// executor can tell from the symbol table whether the program calls
/// `dst_setup_complete`.
const FLAGS: [&str; 8] = [
    "-g",
    "-O1",
    "-ffreestanding",
    "-fno-pic",
    "-no-pie",
    "-fno-stack-protector",
    "-fcf-protection=none",
    "-ffunction-sections",
];

/// Why a build failed.
#[derive(Debug)]
pub enum BuildError {
    /// The scratch directory could not be written.
    Scratch(std::io::Error),
    /// A compiler (the C compiler, or rustc for the runtime's core) could
    /// not be started.
    Spawn(OsString, std::io::Error),
    /// A compile or link step failed (what, its status).
    Failed(&'static str, ExitStatus),
}

/// Builds the dst-core crate as the guest runtime's static library
/// (`dir/libdst_core.a`, returned): `rustc` alone (`$DST_RUSTC`, else
/// `rustc` on PATH), `--cfg dst_guest` for its C entry points, no
/// unwinding, debug assertions on (a broken invariant stops the guest).
/// Built for the host's x86-64: the same machine code a freestanding guest
/// runs, and what a native test links.
pub fn build_core(dir: &Path) -> Result<std::path::PathBuf, BuildError> {
    let src = dir.join("dst-core");
    std::fs::create_dir_all(&src).map_err(BuildError::Scratch)?;
    for (name, text) in CORE {
        std::fs::write(src.join(name), text).map_err(BuildError::Scratch)?;
    }
    let out = dir.join("libdst_core.a");
    let rustc = std::env::var_os("DST_RUSTC").unwrap_or_else(|| "rustc".into());
    let status = Command::new(&rustc)
        .args(["--edition", "2024", "--crate-type", "staticlib"])
        .args(["--crate-name", "dst_core", "--cfg", "dst_guest"])
        .args([
            "-C",
            "panic=abort",
            "-C",
            "opt-level=2",
            "-C",
            "debug-assertions=on",
        ])
        .args(["-C", "overflow-checks=off"])
        .arg(src.join("lib.rs"))
        .arg("-o")
        .arg(&out)
        .status()
        .map_err(|e| BuildError::Spawn(rustc.clone(), e))?;
    if !status.success() {
        return Err(BuildError::Failed(
            "guest runtime core build (rustc)",
            status,
        ));
    }
    Ok(out)
}

/// `dst_region.h` for the guest runtime: the region's layout and the
/// protocol's constants (`dst::region::c_header`), and where this executor
/// puts the region and the decision stream's tail in guest memory.
pub fn region_header() -> String {
    use super::executor::{REGION_AT, TAIL_AT, TAIL_BYTES};
    let mut header = dst::region::c_header();
    header.push_str(&format!(
        "#define DST_REGION_AT {REGION_AT:#x}ull\n\
         #define DST_TAIL_AT {TAIL_AT:#x}ull\n\
         #define DST_TAIL_BYTES {TAIL_BYTES:#x}ull\n"
    ));
    header
}

/// Builds `out` from `args` (sources and compiler flags) with `compiler`,
/// using the scratch directory `dir` (created; its contents replaced).
pub fn build_guest(
    compiler: &OsStr,
    dir: &Path,
    args: &[OsString],
    out: &Path,
) -> Result<(), BuildError> {
    std::fs::create_dir_all(dir).map_err(BuildError::Scratch)?;
    let region = region_header();
    for (name, text) in [
        ("dst.h", DST_H),
        ("dst_kvm.c", RUNTIME),
        ("kvm.ld", LINKER_SCRIPT),
        ("dst_region.h", region.as_str()),
    ] {
        std::fs::write(dir.join(name), text).map_err(BuildError::Scratch)?;
    }
    let run = |command: &mut Command, what| match command.status() {
        Err(e) => Err(BuildError::Spawn(compiler.to_owned(), e)),
        Ok(status) if !status.success() => Err(BuildError::Failed(what, status)),
        Ok(_) => Ok(()),
    };
    let runtime = dir.join("dst_kvm.o");
    run(
        Command::new(compiler)
            .args(FLAGS)
            .arg("-I")
            .arg(dir)
            .arg("-c")
            .arg(dir.join("dst_kvm.c"))
            .arg("-o")
            .arg(&runtime),
        "guest runtime build",
    )?;
    let core = build_core(dir)?;
    run(
        Command::new(compiler)
            .args(FLAGS)
            .args(["-fsanitize-coverage=trace-pc", "-nostdlib", "-static"])
            .arg("-Wl,--gc-sections")
            .arg("-T")
            .arg(dir.join("kvm.ld"))
            .arg("-I")
            .arg(dir)
            .args(args)
            .arg(&runtime)
            .arg(&core)
            .arg("-o")
            .arg(out),
        "kvm build",
    )
}
