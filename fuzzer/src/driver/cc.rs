//! `cc --riscv -o PROGRAM SOURCES...`: builds a guest for the emulator with
//! the right compiler (Debian's `riscv64-linux-gnu-gcc`, or `$DST_RISCV_CC`),
//! flags (static, pthread, debug information for symbolized findings) and
//! guest runtime (`sdk-c/guest/dst_riscv.c`: dst.h's functions as dst's
//! `ecall`s), with `dst.h` on the include path. dst.h and the runtime are
//! compiled into this tool, so an installed `cargo dst-fuzz` needs no
//! source tree. Other arguments (`-O2`, `-DNAME`, more sources) go to the
//! compiler as given. The program is written next to its final name and
//! renamed into place, so a failed build leaves an older one intact.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use super::Failure;
use crate::exit;

const DST_H: &str = include_str!("../../../sdk-c/include/dst.h");
const RUNTIME: &str = include_str!("../../../sdk-c/guest/dst_riscv.c");

/// The compiler `cc --riscv` runs.
fn compiler() -> OsString {
    std::env::var_os("DST_RISCV_CC").unwrap_or_else(|| "riscv64-linux-gnu-gcc".into())
}

/// Builds `output` from `args` (sources and compiler flags).
pub fn cc(riscv: bool, output: &Path, args: &[OsString]) -> Result<i32, Failure> {
    if !riscv {
        return Err((
            exit::USAGE,
            "cc needs the level to build for: --riscv (the emulator's)".into(),
        ));
    }
    if args.is_empty() {
        return Err((
            exit::USAGE,
            "cc --riscv needs at least one source file".into(),
        ));
    }
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("dst-cc-{}-{n}", std::process::id()));
    let unwritable = |e: std::io::Error| (exit::UNWRITABLE, format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(unwritable)?;
    std::fs::write(dir.join("dst.h"), DST_H).map_err(unwritable)?;
    std::fs::write(dir.join("dst_riscv.c"), RUNTIME).map_err(unwritable)?;
    let mut partial = output.as_os_str().to_owned();
    partial.push(".dst-partial");
    let status = Command::new(compiler())
        .args(["-g", "-O1", "-static", "-pthread"])
        .arg("-I")
        .arg(&dir)
        .args(args)
        .arg(dir.join("dst_riscv.c"))
        .arg("-o")
        .arg(&partial)
        .status();
    let _ = std::fs::remove_dir_all(&dir);
    match status {
        Err(e) => Err((
            exit::SETUP_FAILED,
            format!(
                "cannot run {}: {e} (install Debian's gcc-riscv64-linux-gnu and \
                 libc6-dev-riscv64-cross, or set DST_RISCV_CC)",
                compiler().to_string_lossy()
            ),
        )),
        Ok(status) if !status.success() => {
            let _ = std::fs::remove_file(&partial);
            Err((
                exit::BUILD_FAILED,
                format!("the riscv build of {} failed ({status})", output.display()),
            ))
        }
        Ok(_) => {
            std::fs::rename(&partial, output)
                .map_err(|e| (exit::UNWRITABLE, format!("{}: {e}", output.display())))?;
            Ok(exit::OK)
        }
    }
}
