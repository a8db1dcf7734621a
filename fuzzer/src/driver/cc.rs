//! `cc --riscv|--kvm -o PROGRAM SOURCES...`: builds a guest for a level
//! with the right compiler, flags and guest runtime, with `dst.h` on the
//! include path:
//! - `--riscv`, for the emulator: Debian's `riscv64-linux-gnu-gcc` (or
//!   `$DST_RISCV_CC`), static glibc with pthreads, and
//!   `sdk-c/guest/dst_riscv.c` (dst.h's functions as dst's `ecall`s);
//! - `--kvm`, for the KVM executor: the host's `cc` (or `$DST_KVM_CC`,
//!   gcc or clang), freestanding x86-64 without libc, linked by
//!   `sdk-c/guest/kvm.ld` with `sdk-c/guest/dst_kvm.c` (start-up, memcpy
//!   and friends, dst.h's functions as hypercalls) and trace-pc edge
//!   coverage of the program's own code (not the runtime's).
//!
//! (The KVM build itself is `dst_executors::kvm::build`.) dst.h, the
//! runtimes and the linker script are compiled into this tool,
//! so an installed `cargo dst-fuzz` needs no source tree. Other arguments
//! (`-O2`, `-DNAME`, more sources) go to the compiler as given. Unused
//! runtime functions are dropped (`--gc-sections`), so an executor can
//! tell from the symbol table whether the program calls
//! `dst_setup_complete`. The program is written next to its final name and
//! renamed into place, so a failed build leaves an older one intact.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::Failure;
use crate::exit;

const DST_H: &str = include_str!("../../../sdk-c/include/dst.h");
const RISCV_RUNTIME: &str = include_str!("../../../sdk-c/guest/dst_riscv.c");

/// The level a guest is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Riscv,
    Kvm,
}

/// Builds `output` from `args` (sources and compiler flags) for `level`.
pub fn cc(level: Option<Level>, output: &Path, args: &[OsString]) -> Result<i32, Failure> {
    let Some(level) = level else {
        return Err((
            exit::USAGE,
            "cc needs the level to build for: --riscv (the emulator's) or --kvm".into(),
        ));
    };
    if args.is_empty() {
        return Err((exit::USAGE, "cc needs at least one source file".into()));
    }
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("dst-cc-{}-{n}", std::process::id()));
    let result = build(level, &dir, output, args);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn build(level: Level, dir: &Path, output: &Path, args: &[OsString]) -> Result<i32, Failure> {
    let unwritable = |e: std::io::Error| (exit::UNWRITABLE, format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(unwritable)?;
    std::fs::write(dir.join("dst.h"), DST_H).map_err(unwritable)?;
    let mut partial = output.as_os_str().to_owned();
    partial.push(".dst-partial");
    let partial = PathBuf::from(partial);
    let (compiler, install) = match level {
        Level::Riscv => (
            std::env::var_os("DST_RISCV_CC").unwrap_or_else(|| "riscv64-linux-gnu-gcc".into()),
            "install Debian's gcc-riscv64-linux-gnu and libc6-dev-riscv64-cross, or set DST_RISCV_CC",
        ),
        Level::Kvm => (
            std::env::var_os("DST_KVM_CC").unwrap_or_else(|| "cc".into()),
            "install gcc or clang, or set DST_KVM_CC",
        ),
    };
    let failed = |what: &str, status: std::process::ExitStatus| -> Failure {
        let _ = std::fs::remove_file(&partial);
        (
            exit::BUILD_FAILED,
            format!("the {what} of {} failed ({status})", output.display()),
        )
    };
    let run = |command: &mut Command| -> Result<std::process::ExitStatus, Failure> {
        command.status().map_err(|e| {
            (
                exit::SETUP_FAILED,
                format!("cannot run {}: {e} ({install})", compiler.to_string_lossy()),
            )
        })
    };
    match level {
        Level::Riscv => {
            std::fs::write(dir.join("dst_riscv.c"), RISCV_RUNTIME).map_err(unwritable)?;
            let status = run(Command::new(&compiler)
                .args(["-g", "-O1", "-static", "-pthread", "-ffunction-sections"])
                .arg("-Wl,--gc-sections")
                .arg("-I")
                .arg(dir)
                .args(args)
                .arg(dir.join("dst_riscv.c"))
                .arg("-o")
                .arg(&partial))?;
            if !status.success() {
                return Err(failed("riscv build", status));
            }
        }
        Level::Kvm => {
            use dst_executors::kvm::build::{BuildError, build_guest};
            match build_guest(&compiler, dir, args, &partial) {
                Ok(()) => {}
                Err(BuildError::Scratch(e)) => return Err(unwritable(e)),
                Err(BuildError::Spawn(e)) => {
                    return Err((
                        exit::SETUP_FAILED,
                        format!("cannot run {}: {e} ({install})", compiler.to_string_lossy()),
                    ));
                }
                Err(BuildError::Failed(what, status)) => return Err(failed(what, status)),
            }
        }
    }
    std::fs::rename(&partial, output)
        .map_err(|e| (exit::UNWRITABLE, format!("{}: {e}", output.display())))?;
    Ok(exit::OK)
}
