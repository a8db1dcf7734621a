//! `cc --riscv|--kvm|--libfuzzer -o PROGRAM SOURCES...`: builds a program
//! for a level with the right compiler, flags and runtime, with `dst.h` on
//! the include path:
//! - `--riscv`, for the emulator: Debian's `riscv64-linux-gnu-gcc` (or
//!   `$DST_RISCV_CC`), static glibc with pthreads, and
//!   `sdk-c/guest/dst_riscv.c` (dst.h's functions as dst's `ecall`s);
//! - `--kvm`, for the KVM executor: the host's `cc` (or `$DST_KVM_CC`,
//!   gcc or clang), freestanding x86-64 without libc, linked by
//!   `sdk-c/guest/kvm.ld` with `sdk-c/guest/dst_kvm.c` (start-up, memcpy
//!   and friends, dst.h's functions as hypercalls) and trace-pc edge
//!   coverage of the program's own code (not the runtime's);
//! - `--libfuzzer`, an unmodified libFuzzer harness (`LLVMFuzzerTestOneInput`)
//!   `$CC` or `cc` (`$CXX` or `c++` when a source is C++), edges (clang's
//!   inline 8-bit counters, gcc's trace-pc) and trace-cmp comparisons on the harness's
//!   sources (its `memcmp`, `strcmp` and friends left as calls, which the
//!   engine interposes and logs), and the fuzzing engine,
//!   `libdst_engine.a` (`engine/`: `main`, the explorer and dst.h's
//!   functions; found in `$DST_LIB_DIR`, beside this tool, or by
//!   `pkg-config dst`), so the program fuzzes by itself anywhere, in its
//!   own process, and still runs under an outside explorer.
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

use crate::exit;
use crate::exit::Failure;

const DST_H: &str = include_str!("../../../sdk-c/include/dst.h");
const RISCV_RUNTIME: &str = include_str!("../../../sdk-c/guest/dst_riscv.c");
/// Comparison functions the compiler must leave as calls, so the engine's
/// interposed ones (engine/src/intercept.c) see them.
const NO_BUILTIN_COMPARISONS: [&str; 6] = [
    "-fno-builtin-memcmp",
    "-fno-builtin-bcmp",
    "-fno-builtin-strcmp",
    "-fno-builtin-strncmp",
    "-fno-builtin-strcasecmp",
    "-fno-builtin-strncasecmp",
];

/// The level a guest is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Riscv,
    Kvm,
    Libfuzzer,
}

/// Builds `output` from `args` (sources and compiler flags) for `level`.
pub fn cc(level: Option<Level>, output: &Path, args: &[OsString]) -> Result<i32, Failure> {
    let Some(level) = level else {
        return Err(Failure::new(
            exit::USAGE,
            "cc needs the level to build for: --riscv (the emulator's), --kvm or --libfuzzer",
        ));
    };
    if args.is_empty() {
        return Err(Failure::new(
            exit::USAGE,
            "cc needs at least one source file",
        ));
    }
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("dst-cc-{}-{n}", std::process::id()));
    let result = build(level, &dir, output, args);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn build(level: Level, dir: &Path, output: &Path, args: &[OsString]) -> Result<i32, Failure> {
    let unwritable =
        |e: std::io::Error| Failure::new(exit::UNWRITABLE, format!("{}: {e}", dir.display()));
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
            "install gcc or clang, or set DST_KVM_CC; the runtime also needs rustc, or DST_RUSTC",
        ),
        Level::Libfuzzer if args.iter().any(|a| is_source(a, true)) => (
            std::env::var_os("CXX").unwrap_or_else(|| "c++".into()),
            "install g++ or clang++, or set CXX",
        ),
        Level::Libfuzzer => (
            std::env::var_os("CC").unwrap_or_else(|| "cc".into()),
            "install gcc or clang, or set CC",
        ),
    };
    let failed = |what: &str, status: std::process::ExitStatus| -> Failure {
        let _ = std::fs::remove_file(&partial);
        Failure::new(
            exit::BUILD_FAILED,
            format!("the {what} of {} failed ({status})", output.display()),
        )
    };
    let run = |command: &mut Command| -> Result<std::process::ExitStatus, Failure> {
        command.status().map_err(|e| {
            Failure::new(
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
        Level::Libfuzzer => {
            let engine = lib_dir(ENGINE_LIB)?.join(ENGINE_LIB);
            // clang: inline 8-bit counters, the in-process executor's edge
            // map (as -fsanitize=fuzzer-no-link makes them; the flag itself
            // is not given, so that clang links none of its own
            // callbacks); gcc has only trace-pc, hashed into the region.
            let edges = if is_clang(&compiler) {
                "-fsanitize-coverage=inline-8bit-counters,trace-cmp"
            } else {
                "-fsanitize-coverage=trace-pc,trace-cmp"
            };
            let (sources, compile, link) = split_args(args);
            let mut objects = Vec::new();
            for (i, source) in sources.iter().enumerate() {
                let object = dir.join(format!("{i}.o"));
                // Edges and comparisons; memcmp and friends stay calls
                // (not expanded inline), which the engine interposes and
                // logs.
                let mut command = Command::new(&compiler);
                command
                    .args(["-g", "-O1", edges])
                    .args(NO_BUILTIN_COMPARISONS)
                    .arg("-I")
                    .arg(dir);
                let status = run(command
                    .args(&compile)
                    .arg("-c")
                    .arg(source)
                    .arg("-o")
                    .arg(&object))?;
                if !status.success() {
                    return Err(failed("compilation", status));
                }
                objects.push(object);
            }
            // The harness's own strings, for the token mutators.
            let mut found = Vec::new();
            for object in &objects {
                if let Ok(bytes) = std::fs::read(object) {
                    super::tokens::from_object(&bytes, &mut found);
                }
            }
            let tokens_c = dir.join("dst_tokens.c");
            std::fs::write(&tokens_c, super::tokens::section_source(&found)).map_err(unwritable)?;
            let tokens_o = dir.join("dst_tokens.o");
            let status = run(Command::new(&compiler)
                .args(["-x", "c", "-c"])
                .arg(&tokens_c)
                .arg("-o")
                .arg(&tokens_o))?;
            if !status.success() {
                return Err(failed("compilation of the token section", status));
            }
            objects.push(tokens_o);
            // The fuzzing engine, statically (its main, the explorer and
            // dst.h's functions): the program fuzzes by itself wherever it
            // is copied (OSS-Fuzz's $OUT).
            let status = run(Command::new(&compiler)
                .args(&objects)
                .args(&compile)
                .arg(&engine)
                .args(&link)
                .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lgcc_s"])
                .arg("-o")
                .arg(&partial))?;
            if !status.success() {
                return Err(failed("link", status));
            }
        }
        Level::Kvm => {
            use dst_executors::kvm::build::{BuildError, build_guest};
            match build_guest(&compiler, dir, args, &partial) {
                Ok(()) => {}
                Err(BuildError::Scratch(e)) => return Err(unwritable(e)),
                Err(BuildError::Spawn(program, e)) => {
                    return Err(Failure::new(
                        exit::SETUP_FAILED,
                        format!("cannot run {}: {e} ({install})", program.to_string_lossy()),
                    ));
                }
                Err(BuildError::Failed(what, status)) => return Err(failed(what, status)),
            }
        }
    }
    std::fs::rename(&partial, output)
        .map_err(|e| Failure::new(exit::UNWRITABLE, format!("{}: {e}", output.display())))?;
    Ok(exit::OK)
}

/// Whether `arg` names a C (or, with `cxx`, only a C++) source file.
fn is_source(arg: &OsString, cxx: bool) -> bool {
    let ext = Path::new(arg).extension().and_then(|e| e.to_str());
    let is_cxx = matches!(ext, Some("cc" | "cpp" | "cxx" | "C" | "c++"));
    if cxx {
        is_cxx
    } else {
        is_cxx || ext == Some("c")
    }
}

/// Sources; flags for compiling (and linking); flags and files only for
/// the link (`-l`, `-L`, `-Wl,`, objects and archives).
fn split_args(args: &[OsString]) -> (Vec<&OsString>, Vec<&OsString>, Vec<&OsString>) {
    let (mut sources, mut compile, mut link) = (Vec::new(), Vec::new(), Vec::new());
    for arg in args {
        let text = arg.to_string_lossy();
        let ext = Path::new(arg).extension().and_then(|e| e.to_str());
        if is_source(arg, false) {
            sources.push(arg);
        } else if text.starts_with("-l")
            || text.starts_with("-L")
            || text.starts_with("-Wl,")
            || matches!(ext, Some("o" | "a" | "so"))
        {
            link.push(arg);
        } else {
            compile.push(arg);
        }
    }
    (sources, compile, link)
}

/// The fuzzing engine's library (`engine/`).
pub const ENGINE_LIB: &str = "libdst_engine.a";

/// Whether `compiler` is clang (it says so in `--version`).
fn is_clang(compiler: &std::ffi::OsStr) -> bool {
    Command::new(compiler)
        .arg("--version")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("clang"))
}

/// The folder holding the library `file`: `$DST_LIB_DIR`, this tool's own
/// folder (a cargo build of the workspace puts both there), `../lib` beside
/// it, or `pkg-config --variable=libdir dst`.
pub fn lib_dir(file: &str) -> Result<PathBuf, Failure> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os("DST_LIB_DIR") {
        candidates.push(dir.into());
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        candidates.push(dir.join("../lib"));
        candidates.push(dir);
    }
    if let Ok(out) = Command::new("pkg-config")
        .args(["--variable=libdir", "dst"])
        .output()
        && out.status.success()
    {
        candidates.push(String::from_utf8_lossy(&out.stdout).trim().into());
    }
    candidates
        .into_iter()
        .find(|d| d.join(file).is_file())
        .ok_or_else(|| {
            Failure::new(
                exit::SETUP_FAILED,
                format!("cannot find {file}: build it (cargo build -p dst-engine), install it (make -C sdk-c install), or set DST_LIB_DIR"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_arguments_go_to_the_compiler_or_the_linker() {
        let args: Vec<OsString> = [
            "h.c",
            "-O2",
            "-DX=1",
            "util.cc",
            "-lz",
            "-L/opt",
            "x.a",
            "-Wl,-z,now",
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        let (sources, compile, link) = split_args(&args);
        assert_eq!(sources, [&args[0], &args[3]]);
        assert_eq!(compile, [&args[1], &args[2]]);
        assert_eq!(link, [&args[4], &args[5], &args[6], &args[7]]);
        assert!(is_source(&args[3], true) && !is_source(&args[0], true));
    }
}
