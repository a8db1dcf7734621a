//! Comparison hooks into the comparison log (`dst::cmplog`):
//! - gcc's and clang's `-fsanitize-coverage=trace-cmp` callbacks
//!   (`__sanitizer_cov_trace_cmp{1,2,4,8}`, `..._const_cmp{1,2,4,8}`,
//!   `..._switch`; gcc's float ones are accepted and ignored);
//! - `dst_memcmp`, `dst_bcmp`, `dst_strcmp`, `dst_strncmp`, which
//!   `libfuzzer/dst_cmplog.h` (force-included into a harness's C sources by
//!   `cargo dst-fuzz cc --libfuzzer`) puts in place of the C library's, so
//!   only the harness's own calls are logged, not those of libc or of
//!   libdst itself.
//!
//! Each does what the C library's function does; recording is one relaxed
//! load when no explorer asked for a log.

use std::ffi::{c_char, c_int, c_void};

use dst_sdk::cmplog::{record_bytes, record_int};

macro_rules! cmp_hooks {
    ($($name:ident, $const_name:ident: $ty:ty, $len:expr;)*) => {$(
        /// A trace-cmp callback.
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(first: $ty, second: $ty) {
            record_int($len, first as u64, second as u64, false);
        }

        /// A trace-cmp callback whose first operand is a constant.
        #[unsafe(no_mangle)]
        pub extern "C" fn $const_name(first: $ty, second: $ty) {
            record_int($len, first as u64, second as u64, true);
        }
    )*};
}

cmp_hooks! {
    __sanitizer_cov_trace_cmp1, __sanitizer_cov_trace_const_cmp1: u8, 1;
    __sanitizer_cov_trace_cmp2, __sanitizer_cov_trace_const_cmp2: u16, 2;
    __sanitizer_cov_trace_cmp4, __sanitizer_cov_trace_const_cmp4: u32, 4;
    __sanitizer_cov_trace_cmp8, __sanitizer_cov_trace_const_cmp8: u64, 8;
}

/// gcc's float comparison callback (not logged).
#[unsafe(no_mangle)]
pub extern "C" fn __sanitizer_cov_trace_cmpf(_first: f32, _second: f32) {}

/// gcc's double comparison callback (not logged).
#[unsafe(no_mangle)]
pub extern "C" fn __sanitizer_cov_trace_cmpd(_first: f64, _second: f64) {}

/// A switch: `cases[0]` values of `cases[1]` bits follow.
///
/// # Safety
/// `cases` is the compiler's table for this switch.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __sanitizer_cov_trace_switch(value: u64, cases: *const u64) {
    if cases.is_null() {
        return;
    }
    // SAFETY: the compiler's table: a count, a width, then the values.
    let (count, bits) = unsafe { (*cases, *cases.add(1)) };
    let len = (bits / 8).clamp(1, 8) as u8;
    for i in 0..count.min(16) as usize {
        // SAFETY: as above, `count` values follow.
        let case = unsafe { *cases.add(2 + i) };
        record_int(len, value, case, false);
    }
}

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
