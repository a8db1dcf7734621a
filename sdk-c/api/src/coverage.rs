//! Edge coverage of C and C++ code, into the region's coverage map:
//! - gcc's (or clang's) `-fsanitize-coverage=trace-pc`: the compiler calls
//!   `__sanitizer_cov_trace_pc()` at every edge; libdst hashes the pair of
//!   consecutive call sites (AFL-style edges).
//! - clang's `-fsanitize-coverage=trace-pc-guard`: every edge has a guard
//!   word, numbered at load time; each call counts its guard's slot.
//!
//! ```text
//! gcc   -fsanitize-coverage=trace-pc -Isdk-c/include service.c -Ltarget/debug -ldst
//! clang -c -fsanitize-coverage=trace-pc-guard -Isdk-c/include service.c
//! clang service.o -Ltarget/debug -ldst
//! ```
//!
//! clang takes the flag when compiling only: given at link time, it links
//! its own weak callbacks into the program, which take precedence over
//! libdst's.

use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU32, AtomicUsize, Ordering};

/// The coverage map, once known (null before the first edge).
static MAP: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MAP_LEN: AtomicUsize = AtomicUsize::new(0);
/// 0: not looked up yet; 1: known (possibly empty).
static STATE: AtomicU8 = AtomicU8::new(0);
/// The previous edge's call site, shifted (as AFL does), so edges A->B and
/// B->A differ.
static PREVIOUS: AtomicUsize = AtomicUsize::new(0);

/// Guard numbers handed out so far (trace-pc-guard).
static GUARDS: AtomicU32 = AtomicU32::new(0);

/// Forgets the previous edge: a persistent run starts like a fresh process.
pub fn new_run() {
    PREVIOUS.store(0, Ordering::Relaxed);
}

/// The coverage map and its length (0 when there is none).
fn map() -> (*mut u8, usize) {
    if STATE.load(Ordering::Acquire) == 0 {
        let (map, len) = dst_sdk::runtime::coverage_map();
        MAP.store(map, Ordering::Relaxed);
        MAP_LEN.store(len, Ordering::Relaxed);
        STATE.store(1, Ordering::Release);
    }
    (MAP.load(Ordering::Relaxed), MAP_LEN.load(Ordering::Relaxed))
}

/// Set once hashed edges are seen: they may use the whole map.
static HASHED: AtomicU8 = AtomicU8::new(0);

/// Counts the edge ending at `pc`.
extern "C" fn dst_cov_edge(pc: usize) {
    let (_, len) = map();
    if len == 0 {
        return;
    }
    if HASHED.load(Ordering::Relaxed) == 0 {
        HASHED.store(1, Ordering::Relaxed);
        dst_sdk::runtime::set_coverage_extent(u64::MAX);
    }
    let current = (pc ^ (pc >> 17)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16;
    let previous = PREVIOUS.swap(current >> 1, Ordering::Relaxed);
    bump(MAP.load(Ordering::Relaxed), (current ^ previous) % len);
}

/// Counts one hit of `slot` in `map`.
#[inline(always)]
fn bump(map: *mut u8, slot: usize) {
    // SAFETY: callers pass the map from `map()` and `slot` below its length:
    // inside the region's coverage section, mapped for the life of the
    // process.
    unsafe {
        let counter = map.add(slot);
        counter.write(counter.read().wrapping_add(1));
    }
}

/// The `trace-pc` callback: passes its return address (the edge's call site)
/// to `dst_cov_edge`. Naked, because the return address is only at the
/// top of the stack before any prologue.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __sanitizer_cov_trace_pc() {
    core::arch::naked_asm!("mov rdi, [rsp]", "jmp {edge}", edge = sym dst_cov_edge)
}

/// clang's trace-pc-guard set-up: numbers the guards of one module (once).
///
/// # Safety
/// `start..stop` are the module's guard words, as clang passes them.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __sanitizer_cov_trace_pc_guard_init(start: *mut u32, stop: *mut u32) {
    if start.is_null() || start >= stop {
        return;
    }
    // SAFETY: clang's contract: `start..stop` is this module's guard array.
    let guards = unsafe { std::slice::from_raw_parts_mut(start, stop.offset_from(start) as usize) };
    if guards[0] != 0 {
        return;
    }
    for guard in guards {
        *guard = GUARDS.fetch_add(1, Ordering::Relaxed) + 1;
    }
    // Edges go after the decision window, one slot each.
    let used = dst_sdk::region::DECISION_WINDOW + u64::from(GUARDS.load(Ordering::Relaxed)) + 1;
    dst_sdk::runtime::set_coverage_extent(used);
}

/// clang's trace-pc-guard callback: counts the edge's guard.
///
/// # Safety
/// `guard` is a guard word numbered by `__sanitizer_cov_trace_pc_guard_init`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __sanitizer_cov_trace_pc_guard(guard: *mut u32) {
    // SAFETY: clang passes this edge's guard word.
    let id = unsafe { guard.read() } as usize;
    let (map, len) = map();
    if id == 0 || len == 0 {
        return;
    }
    // Guards are numbered densely, after the decision window: a small
    // program touches few pages, and the explorer observes only those.
    bump(map, (dst_sdk::region::DECISION_WINDOW as usize + id) % len);
}
