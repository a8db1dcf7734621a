//! Edge coverage of C and C++ code built with gcc's or clang's
//! `-fsanitize-coverage=trace-pc`: the compiler calls
//! `__sanitizer_cov_trace_pc()` at every edge; libdst hashes the pair of
//! consecutive call sites into the region's coverage map (AFL-style edges).
//!
//! ```text
//! cc -fsanitize-coverage=trace-pc -Isdk-c/include service.c -Ltarget/debug -ldst
//! ```

use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};

/// The coverage map, once known (null before the first edge).
static MAP: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MAP_LEN: AtomicUsize = AtomicUsize::new(0);
/// 0: not looked up yet; 1: known (possibly empty).
static STATE: AtomicU8 = AtomicU8::new(0);
/// The previous edge's call site, shifted (as AFL does), so edges A->B and
/// B->A differ.
static PREVIOUS: AtomicUsize = AtomicUsize::new(0);

/// Counts the edge ending at `pc`.
extern "C" fn dst_cov_edge(pc: usize) {
    if STATE.load(Ordering::Acquire) == 0 {
        let (map, len) = dst_sdk::runtime::coverage_map();
        MAP.store(map, Ordering::Relaxed);
        MAP_LEN.store(len, Ordering::Relaxed);
        STATE.store(1, Ordering::Release);
    }
    let len = MAP_LEN.load(Ordering::Relaxed);
    if len == 0 {
        return;
    }
    let current = (pc ^ (pc >> 17)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16;
    let previous = PREVIOUS.swap(current >> 1, Ordering::Relaxed);
    let slot = (current ^ previous) % len;
    // SAFETY: `slot < len`, the size of the region's coverage section, which
    // stays mapped for the life of the process.
    unsafe {
        let counter = MAP.load(Ordering::Relaxed).add(slot);
        counter.write(counter.read().wrapping_add(1));
    }
}

/// The `trace-pc` callback: passes its return address (the edge's call site)
/// to [`dst_cov_edge`]. Naked, because the return address is only at the
/// top of the stack before any prologue.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __sanitizer_cov_trace_pc() {
    core::arch::naked_asm!("mov rdi, [rsp]", "jmp {edge}", edge = sym dst_cov_edge)
}
