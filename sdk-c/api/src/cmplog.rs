//! Comparison hooks into the comparison log (`dst::cmplog`; gcc's and
//! clang's `-fsanitize-coverage=trace-cmp` callbacks are the dst crate's,
//! shared with Rust targets, and linked in from it):
//! - `dst_memcmp`, `dst_bcmp`, `dst_strcmp`, `dst_strncmp`, which
//!   `libfuzzer/dst_cmplog.h` (force-included into the C sources of a
//!   harness linked with libdst) puts in place of the C library's, so
//!   only the harness's own calls are logged, not those of libc or of
//!   libdst itself. (The fuzzing engine interposes the C library's
//!   functions themselves: `engine/src/intercept.c`.)
//!
//! Each does what the C library's function does; recording is one relaxed
//! load when no explorer asked for a log.

use std::ffi::{c_char, c_int, c_void};

use dst_sdk::cmplog::record_bytes;

/// # Safety
/// `p` points at `n` readable bytes.
unsafe fn bytes<'a>(p: *const c_void, n: usize) -> &'a [u8] {
    if n == 0 || p.is_null() {
        return &[];
    }
    // SAFETY: caller's contract.
    unsafe { std::slice::from_raw_parts(p.cast(), n) }
}

/// # Safety
/// `s` is a NUL-terminated string; at most `max` bytes are looked at.
unsafe fn c_bytes<'a>(s: *const c_char, max: usize) -> &'a [u8] {
    if s.is_null() {
        return &[];
    }
    let mut n = 0;
    // SAFETY: reading up to the terminator (or `max`) of a C string.
    while n < max && unsafe { *s.add(n) } != 0 {
        n += 1;
    }
    // SAFETY: the `n` bytes just read.
    unsafe { std::slice::from_raw_parts(s.cast(), n) }
}

fn order(a: &[u8], b: &[u8]) -> c_int {
    match a.cmp(b) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }
}

/// `memcmp`, logged.
///
/// # Safety
/// As `memcmp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_memcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
    // SAFETY: as memcmp's contract.
    let (a, b) = unsafe { (bytes(a, n), bytes(b, n)) };
    record_bytes(a, b);
    order(a, b)
}

/// `bcmp`, logged.
///
/// # Safety
/// As `bcmp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_bcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
    // SAFETY: forwarded.
    unsafe { dst_memcmp(a, b, n) }
}

/// `strncmp`, logged.
///
/// # Safety
/// As `strncmp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_strncmp(a: *const c_char, b: *const c_char, n: usize) -> c_int {
    // SAFETY: C strings, read up to `n` bytes.
    let (a, b) = unsafe { (c_bytes(a, n), c_bytes(b, n)) };
    record_bytes(a, b);
    order(a, b)
}

/// `strcmp`, logged.
///
/// # Safety
/// As `strcmp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_strcmp(a: *const c_char, b: *const c_char) -> c_int {
    // SAFETY: forwarded.
    unsafe { dst_strncmp(a, b, usize::MAX) }
}
