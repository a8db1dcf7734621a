//! `dst-engine`: `libdst_engine.a`, dst as a fuzzing engine. It is what
//! `$LIB_FUZZING_ENGINE` names in an OSS-Fuzz `build.sh` (and what `cargo
//! dst-fuzz cc --libfuzzer` links): a libFuzzer harness linked with it is
//! a self-contained fuzzer, run as libFuzzer binaries are run, with
//! libFuzzer's flags, and needs nothing else installed.
//!
//! How the parts fit: `src/main.c` is the program's `main` and calls
//! [`dst_engine_main`] with the harness's functions; that is libdst's
//! libFuzzer `main` (`dst_c_api::libfuzzer::main_with`: files run one by
//! one, an outside explorer's runs in persistent mode) with this engine's
//! [`ENGINE`]: to fuzz, the explorer (`dst-fuzz`) runs in this process,
//! each run one call of `LLVMFuzzerTestOneInput` through the in-process
//! executor (`dst_fuzz::driver::libfuzzer::in_process`). dst.h's
//! functions come with it (`dst-c-api`): a harness that uses dst.h links
//! this library and not libdst, so its assertions and faults reach the
//! same SDK the explorer reads. The explorer stays out of libdst: the SDK
//! alone is small.
//!
//! Comparisons: `trace-cmp` callbacks (the `dst` crate's) and the C
//! library's `memcmp`, `bcmp`, `strcmp`, `strncmp`, `strcasecmp` and
//! `strncasecmp`, interposed for the whole program (`src/intercept.c`, as
//! libFuzzer's interceptors), log into the comparison log while a run
//! asks for it.
//!
//! Coverage: clang's inline 8-bit counters (`-fsanitize=fuzzer-no-link`,
//! as OSS-Fuzz compiles for libFuzzer) are the in-process executor's edge
//! map (`dst_executors::edges`); under an outside explorer they are copied
//! into the region's coverage map after each run ([`copy_edges`]). gcc's
//! `trace-pc` edges go into the region's map as under libdst.

use std::ffi::{c_char, c_int};

use dst_c_api::libfuzzer::{Engine, Initialize, TestOneInput, main_with};

/// This engine: fuzzing explores in this process.
pub const ENGINE: Engine = Engine {
    fuzz,
    after_run: copy_edges,
};

/// The harness's `main` (called by `src/main.c`).
///
/// # Safety
/// `argc` and `argv` are `main`'s (as pointers); `test` and `init` are the
/// harness's functions (or null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_engine_main(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    test: Option<TestOneInput>,
    init: Option<Initialize>,
) -> c_int {
    // SAFETY: forwarded from this function's contract.
    unsafe { main_with(argc, argv, test, init, &ENGINE) }
}

/// Fuzzes `test` in this process with libFuzzer's command line `args`.
fn fuzz(args: &[String], test: TestOneInput) -> c_int {
    // The driver sets the length limit before the first run: read once
    // then, not at every run.
    let mut max_len = None;
    let target = Box::new(move || {
        let max = *max_len.get_or_insert_with(dst::libfuzzer::max_len);
        // SAFETY: the harness's entry point.
        unsafe { dst_c_api::libfuzzer::run_once(test, max) };
    });
    dst_fuzz::driver::libfuzzer::in_process(args.get(1..).unwrap_or_default(), target)
}

/// Whether this run's comparisons are logged (`src/intercept.c`).
#[unsafe(no_mangle)]
pub extern "C" fn dst_engine_cmplog_active() -> c_int {
    c_int::from(dst::cmplog::active())
}

/// Logs a comparison of `n` bytes at `a` and `b` (`src/intercept.c`).
///
/// # Safety
/// `a` and `b` point at `n` readable bytes each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_engine_cmplog_bytes(a: *const u8, b: *const u8, n: usize) {
    if a.is_null() || b.is_null() || n == 0 {
        return;
    }
    // SAFETY: the caller's contract.
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts(a, n),
            std::slice::from_raw_parts(b, n),
        )
    };
    dst::cmplog::record_bytes(a, b);
}

/// Copies the harness's inline 8-bit counters into the region's coverage
/// map (after its decision window), for an explorer in another process,
/// and clears them for the next run.
fn copy_edges() {
    if !dst_executors::edges::instrumented() {
        return;
    }
    let (map, len) = dst::runtime::coverage_map();
    let window = dst::region::DECISION_WINDOW as usize;
    if map.is_null() || len <= window {
        return;
    }
    let edges = dst_executors::edges::map();
    // SAFETY: the instrumented counters, static memory written only by the
    // harness's code, which is between runs.
    let counters = unsafe { std::slice::from_raw_parts_mut(edges.as_mut_ptr(), edges.len()) };
    let room = (len - window).min(counters.len());
    // SAFETY: the region's coverage section, `len` bytes mapped for the
    // life of the process; nothing else writes it between runs.
    let region = unsafe { std::slice::from_raw_parts_mut(map.add(window), room) };
    region.copy_from_slice(&counters[..room]);
    counters.fill(0);
    dst::runtime::set_coverage_extent((window + room + 1) as u64);
}
