//! Edge coverage of Rust targets: LLVM's sanitizer coverage with inline 8-bit
//! counters, compiled into the user's crates by `cargo dst-fuzz` (see the
//! driver's rustc wrapper). Each instrumented module registers its counters
//! through [`__sanitizer_cov_8bit_counters_init`] before `main`; the linker
//! merges them into one section, so one contiguous range results.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use dst_kernel::Map;

static START: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static LEN: AtomicUsize = AtomicUsize::new(0);
/// Stands in for the counters of an uninstrumented binary.
static mut FALLBACK: [u8; 1] = [0];

/// Called by instrumented modules' constructors with their counters.
///
/// # Safety
/// `start..stop` must be a valid, static range of counters (LLVM guarantees
/// this for the pointers it passes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __sanitizer_cov_8bit_counters_init(start: *mut u8, stop: *mut u8) {
    if start.is_null() || stop <= start {
        return;
    }
    let current = START.load(Ordering::Acquire);
    let current_end = current.wrapping_add(LEN.load(Ordering::Acquire));
    let (lo, hi) = if current.is_null() {
        (start, stop)
    } else {
        (current.min(start), current_end.max(stop))
    };
    START.store(lo, Ordering::Release);
    LEN.store(hi as usize - lo as usize, Ordering::Release);
}

/// Called by modules built with `-sanitizer-coverage-pc-table`; unused.
///
/// # Safety
/// Nothing is read from the pointers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __sanitizer_cov_pcs_init(_start: *const usize, _stop: *const usize) {}

/// The edge counters: the instrumented range, or a one-byte stand-in.
pub fn map() -> Map<'static> {
    let start = START.load(Ordering::Acquire);
    // SAFETY: the counters are static memory registered before `main` (or
    // the static stand-in), written only by instrumented code as it runs.
    unsafe {
        if start.is_null() {
            Map::from_raw_parts((&raw mut FALLBACK).cast::<u8>(), 1)
        } else {
            Map::from_raw_parts(start, LEN.load(Ordering::Acquire))
        }
    }
}

/// Whether the binary was built with edge instrumentation.
pub fn instrumented() -> bool {
    !START.load(Ordering::Acquire).is_null()
}
