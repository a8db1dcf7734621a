//! The `main` of a libFuzzer harness: `libfuzzer/dst_libfuzzer_main.c`
//! (which `-ldst` harnesses link) calls [`dst_libfuzzer_main`], and the
//! fuzzing engine's `main` (`engine/`, what `cargo dst-fuzz cc
//! --libfuzzer` and `$LIB_FUZZING_ENGINE` link) calls [`main_with`], with
//! the harness's `LLVMFuzzerTestOneInput` and (if it has one)
//! `LLVMFuzzerInitialize`, as AFL++'s libAFLDriver does.
//!
//! - Under dst (an explorer's region or fork server, or a `DST_INPUT` /
//!   `DST_SEED` replay): `LLVMFuzzerInitialize` runs once, setup is
//!   complete (the fork server starts here under `DST_DEFER=1`), and each
//!   input is one call of the harness in persistent mode, its bytes taken
//!   from the decision stream (`dst::libfuzzer::input`).
//! - By itself, as a libFuzzer binary: files as arguments are run one by
//!   one with their bytes (`Running: FILE`, `-runs` times each, `-timeout`
//!   and `-max_len` as libFuzzer applies them; a deadly signal or timeout
//!   exits with libFuzzer's status, 77 or 70), and dst.h decisions inside
//!   take their nominal values. Otherwise (corpus directories, or nothing)
//!   it fuzzes, as its [`Engine`] does: libdst's runs `cargo-dst-fuzz
//!   libfuzzer` on the harness with the same arguments (`$DST_FUZZ_BIN`,
//!   else `cargo-dst-fuzz` on `PATH`); the engine library explores in the
//!   harness's own process.

use std::ffi::{CStr, CString, c_char, c_int};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use dst_sdk::libfuzzer::{self as lf, Flags};

/// `LLVMFuzzerTestOneInput`.
pub type TestOneInput = unsafe extern "C" fn(*const u8, usize) -> c_int;
/// `LLVMFuzzerInitialize`.
pub type Initialize = unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int;

/// The program that fuzzes a harness run by itself.
pub const FUZZ_BIN_ENV: &str = "DST_FUZZ_BIN";

static CRASH_EXIT: AtomicI32 = AtomicI32::new(lf::ERROR_EXITCODE);
static TIMEOUT_EXIT: AtomicI32 = AtomicI32::new(lf::TIMEOUT_EXITCODE);
static TIMEOUT_SECONDS: AtomicU64 = AtomicU64::new(0);

/// What a harness's `main` does beyond libdst's common part.
pub struct Engine {
    /// Fuzzes the harness, given `main`'s arguments (no files among them;
    /// `LLVMFuzzerInitialize` has run). Returns the exit status.
    pub fuzz: fn(args: &[String], test: TestOneInput) -> c_int,
    /// Called after each run under an outside explorer (the engine copies
    /// its edge counters into the region there).
    pub after_run: fn(),
}

/// libdst's: fuzzing runs `cargo-dst-fuzz`.
const LIBDST: Engine = Engine {
    fuzz: |args, _| fuzz(args),
    after_run: || {},
};

/// The harness's `main` with libdst's [`Engine`]: see the module doc.
/// Returns `main`'s status.
///
/// # Safety
/// `argc` and `argv` are `main`'s (as pointers); `test` and `init` are the
/// harness's functions (or null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_libfuzzer_main(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    test: Option<TestOneInput>,
    init: Option<Initialize>,
) -> c_int {
    // SAFETY: forwarded from this function's contract.
    unsafe { main_with(argc, argv, test, init, &LIBDST) }
}

/// The harness's `main` with `engine`: see the module doc.
///
/// # Safety
/// As for [`dst_libfuzzer_main`].
pub unsafe fn main_with(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    test: Option<TestOneInput>,
    init: Option<Initialize>,
    engine: &Engine,
) -> c_int {
    let Some(test) = test else {
        eprintln!("dst: no LLVMFuzzerTestOneInput in this program");
        return 1;
    };
    if let Some(init) = init {
        // SAFETY: main's own argc and argv, passed on as libFuzzer does.
        unsafe { init(argc, argv) };
    }
    // SAFETY: main's arguments, possibly changed by the initializer.
    let args = unsafe { arguments(argc, argv) };
    if under_dst() {
        dst_sdk::cmplog::attach_from_env();
        crate::start_fork_server();
        dst_sdk::lifecycle::setup_complete(&serde_json::Value::Null);
        let max_len = lf::max_len();
        dst_sdk::run(|| {
            // SAFETY: the harness's entry point.
            unsafe { run_once(test, max_len) };
            (engine.after_run)();
        });
        // A replay (DST_INPUT, DST_SEED) that broke a property says so in
        // its status, as a crash does in its signal.
        let explored = std::env::var_os(dst_sdk::shm::REGION_ENV).is_some();
        if let (false, Some(message)) = (explored, dst_sdk::runtime::first_failure()) {
            eprintln!("dst: the run broke \"{message}\"");
            return 1;
        }
        return 0;
    }
    let flags = match Flags::parse(args.iter().skip(1)) {
        Ok(flags) => flags,
        Err(err) => {
            eprintln!("dst: {err}");
            return 1;
        }
    };
    for flag in &flags.unknown {
        eprintln!("WARNING: unrecognized flag '{flag}'; use -help=1 to list all flags");
    }
    if flags.help {
        eprintln!("{}", HELP);
        return 0;
    }
    let files = !flags.inputs.is_empty() && flags.inputs.iter().all(|p| p.is_file());
    if files {
        // SAFETY: a test of the harness in this process, as libFuzzer's.
        unsafe { run_files(&flags, test) }
    } else {
        (engine.fuzz)(&args, test)
    }
}

const HELP: &str = "\
Usage (a libFuzzer harness linked by cargo dst-fuzz cc --libfuzzer):
  to fuzz, pass 0 or more corpus directories (the first receives new inputs):
    ./harness [-flag=value ...] [dir1 [dir2 ...]]
  to run inputs, pass 1 or more files:
    ./harness [-flag=value ...] file1 [file2 ...]
Flags: -runs -max_total_time -seed -max_len -timeout -dict -artifact_prefix
       -exact_artifact_path -error_exitcode -timeout_exitcode -help
Fuzzing explores in this process when the harness links dst's engine
library (cargo dst-fuzz cc --libfuzzer, $LIB_FUZZING_ENGINE), else runs
cargo-dst-fuzz (on PATH, or $DST_FUZZ_BIN).";

/// One run of the harness: its bytes from the decision stream (at most
/// `max_len`), edges counted as in a fresh process.
///
/// # Safety
/// `test` is the harness's entry point.
pub unsafe fn run_once(test: TestOneInput, max_len: usize) {
    crate::coverage::new_run();
    let data = lf::input(max_len);
    // SAFETY: the harness's entry point, with a buffer it may read.
    unsafe { test(data.as_ptr(), data.len()) };
}

/// Whether dst drives this process.
fn under_dst() -> bool {
    [
        dst_sdk::shm::REGION_ENV,
        dst_sdk::forkserver::FORKSERVER_ENV,
        "DST_INPUT",
        "DST_SEED",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some())
}

/// # Safety
/// `argc` and `argv` point at main's argument count and vector.
unsafe fn arguments(argc: *mut c_int, argv: *mut *mut *mut c_char) -> Vec<String> {
    if argc.is_null() || argv.is_null() {
        return Vec::new();
    }
    // SAFETY: main's arguments (caller's contract).
    let (count, vector) = unsafe { (*argc, *argv) };
    (0..count.max(0) as usize)
        .filter_map(|i| {
            // SAFETY: argv holds argc strings.
            let arg = unsafe { *vector.add(i) };
            (!arg.is_null()).then(|| {
                // SAFETY: each a NUL-terminated string.
                unsafe { CStr::from_ptr(arg) }
                    .to_string_lossy()
                    .into_owned()
            })
        })
        .collect()
}

/// Writes `text` to stderr from a signal handler.
fn write_stderr(text: &[u8]) {
    // SAFETY: write(2) is async-signal-safe; the buffer is valid.
    unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
}

extern "C" fn on_deadly_signal(_signal: c_int) {
    write_stderr(b"==ERROR: libFuzzer: deadly signal (dst's libFuzzer driver)\n");
    // SAFETY: ending the process from a signal handler.
    unsafe { libc::_exit(CRASH_EXIT.load(Ordering::Relaxed)) };
}

extern "C" fn on_alarm(_signal: c_int) {
    write_stderr(b"==ERROR: libFuzzer: timeout (dst's libFuzzer driver)\n");
    // SAFETY: as above.
    unsafe { libc::_exit(TIMEOUT_EXIT.load(Ordering::Relaxed)) };
}

fn handle(signal: c_int, handler: extern "C" fn(c_int)) {
    // SAFETY: installing a handler that only writes and exits.
    unsafe { libc::signal(signal, handler as libc::sighandler_t) };
}

/// Runs each input file through the harness, as libFuzzer does with files.
///
/// # Safety
/// `test` is the harness's entry point.
unsafe fn run_files(flags: &Flags, test: TestOneInput) -> c_int {
    CRASH_EXIT.store(flags.crash_exit(), Ordering::Relaxed);
    TIMEOUT_EXIT.store(flags.timeout_exit(), Ordering::Relaxed);
    TIMEOUT_SECONDS.store(flags.timeout.unwrap_or(1200), Ordering::Relaxed);
    for signal in [
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGABRT,
        libc::SIGILL,
        libc::SIGFPE,
    ] {
        handle(signal, on_deadly_signal);
    }
    handle(libc::SIGALRM, on_alarm);
    if std::env::var_os("DST_SEED").is_none() {
        // dst.h decisions in the code under test take their nominal values,
        // so that running a file is the same every time.
        // SAFETY: before the harness runs (setenv beside a thread's getenv
        // is the only hazard; an initializer that started threads that read
        // the environment is not supported).
        unsafe { std::env::set_var("DST_SEED", "0") };
    }
    let runs = flags.runs.filter(|&r| r > 0).unwrap_or(1);
    for path in &flags.inputs {
        let mut data = match std::fs::read(path) {
            Ok(data) => data,
            Err(err) => {
                eprintln!("dst: cannot read {}: {err}", path.display());
                return 1;
            }
        };
        if let Some(max) = flags.max_len.filter(|&m| m > 0) {
            data.truncate(max);
        }
        eprintln!("Running: {}", path.display());
        let started = std::time::Instant::now();
        for _ in 0..runs {
            let seconds = TIMEOUT_SECONDS
                .load(Ordering::Relaxed)
                .min(u64::from(u32::MAX));
            // SAFETY: alarm(2) has no memory effects.
            unsafe { libc::alarm(seconds as u32) };
            // SAFETY: the harness's entry point, with the file's bytes.
            unsafe { test(data.as_ptr(), data.len()) };
            // SAFETY: as above.
            unsafe { libc::alarm(0) };
        }
        eprintln!(
            "Executed {} in {} ms",
            path.display(),
            started.elapsed().as_millis()
        );
    }
    0
}

/// Fuzzes this harness: `cargo-dst-fuzz libfuzzer SELF ARGS...` in place
/// of this process.
fn fuzz(args: &[String]) -> c_int {
    let program = std::env::var_os(FUZZ_BIN_ENV).unwrap_or_else(|| "cargo-dst-fuzz".into());
    let me = match std::fs::read_link("/proc/self/exe") {
        Ok(path) => path,
        Err(err) => {
            eprintln!("dst: cannot find this program's path: {err}");
            return 1;
        }
    };
    let mut words: Vec<CString> = Vec::new();
    let c = |text: &[u8]| CString::new(text).unwrap_or_default();
    use std::os::unix::ffi::OsStrExt;
    words.push(c(program.as_bytes()));
    words.push(c(b"libfuzzer"));
    words.push(c(me.as_os_str().as_bytes()));
    words.extend(args.iter().skip(1).map(|a| c(a.as_bytes())));
    let mut pointers: Vec<*const c_char> = words.iter().map(|w| w.as_ptr()).collect();
    pointers.push(std::ptr::null());
    // SAFETY: a NUL-terminated vector of NUL-terminated strings that
    // outlive the call; execvp returns only on failure.
    unsafe { libc::execvp(pointers[0], pointers.as_ptr()) };
    eprintln!(
        "dst: to fuzz, this harness runs {} (not found: {}); install cargo-dst-fuzz or set {FUZZ_BIN_ENV}; to run inputs, pass files",
        program.to_string_lossy(),
        std::io::Error::last_os_error()
    );
    1
}
