//! The comparison log: what a target compared in its last run (integer
//! comparisons from `-fsanitize-coverage=trace-cmp` in C and
//! `-sanitizer-coverage-trace-compares` in Rust, whose callbacks are
//! defined here, and `memcmp`, `strcmp`, `strncmp` in code built by `cargo
//! dst-fuzz cc --libfuzzer`), so the explorer can write a compared value
//! where its other operand came from (LibAFL's input-to-state replacement,
//! as AFL++'s cmplog).
//!
//! The process executor creates a shared-memory segment of [`SIZE`] bytes
//! and names it in [`ENV`]; libdst maps it before its fork server starts
//! ([`attach_from_env`]), and the hooks append [`Entry`]s until
//! [`CAPACITY`] are taken. The in-process executor makes its own log this
//! process's ([`attach_local`]). The executor zeroes the count before each
//! run. Without a log (no explorer, or another level) recording is one
//! relaxed load and a branch.
//!
//! Layout: a [`Header`] (count, capacity, magic), then `CAPACITY` entries.
//! A target can scribble on it: the reader clamps the count and copies
//! entries out, so a bad log costs only bad suggestions.

use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

/// The environment variable naming the segment.
pub const ENV: &str = "DST_CMPLOG";
/// Entries per run.
pub const CAPACITY: usize = 1024;
/// Bytes of each operand of a byte-string comparison that are kept.
pub const MAX_BYTES: usize = 32;
/// The header's magic word ("DSTQ").
pub const MAGIC: u32 = u32::from_le_bytes(*b"DSTQ");

/// An integer comparison of `len` bytes (1, 2, 4 or 8).
pub const KIND_INT: u8 = 1;
/// A comparison of byte strings (`memcmp`, `strcmp`), `len` bytes each.
pub const KIND_BYTES: u8 = 2;

/// The segment's first bytes.
#[repr(C)]
pub struct Header {
    /// Entries appended in this run (may exceed the capacity: the rest
    /// were dropped).
    pub count: AtomicU32,
    pub capacity: u32,
    pub magic: u32,
    pub _reserved: u32,
}

/// One comparison.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// [`KIND_INT`] or [`KIND_BYTES`].
    pub kind: u8,
    pub len: u8,
    /// The first operand is a constant (trace-cmp's `const_cmp`).
    pub first_is_const: u8,
    pub _reserved: [u8; 5],
    /// The operands: little-endian integers, or the first `len` bytes.
    pub first: [u8; MAX_BYTES],
    pub second: [u8; MAX_BYTES],
}

/// Bytes of the segment.
pub const SIZE: usize = size_of::<Header>() + CAPACITY * size_of::<Entry>();

static LOG: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());

/// Maps the segment named in [`ENV`], once; silently nothing when the
/// variable is missing or the segment is not a comparison log.
#[cfg(unix)]
pub fn attach_from_env() {
    if !LOG.load(Ordering::Relaxed).is_null() {
        return;
    }
    let Some(name) = std::env::var_os(ENV) else {
        return;
    };
    use std::os::unix::ffi::OsStrExt;
    let Ok(name) = std::ffi::CString::new(name.as_bytes()) else {
        return;
    };
    let Ok((base, len)) = crate::shm::open_mapping(&name) else {
        return;
    };
    // SAFETY: `base` maps `len` bytes; the header is read only when it fits.
    let valid = len >= SIZE
        && unsafe {
            let header = &*base.cast::<Header>();
            header.magic == MAGIC && header.capacity as usize == CAPACITY
        };
    if valid {
        LOG.store(base, Ordering::Release);
    } else {
        // SAFETY: our own mapping, not published.
        unsafe { libc::munmap(base.cast(), len) };
    }
}

/// Not on this platform.
#[cfg(not(unix))]
pub fn attach_from_env() {}

/// Makes `log` this process's comparison log: for a target that runs in
/// the explorer's own process. Undone by [`detach_local`], or when `log`
/// is dropped.
#[cfg(unix)]
pub fn attach_local(log: &Log) {
    LOG.store(log.base, Ordering::Release);
}

/// Stops logging into `log`, if it is this process's log.
#[cfg(unix)]
pub fn detach_local(log: &Log) {
    let _ = LOG.compare_exchange(
        log.base,
        std::ptr::null_mut(),
        Ordering::AcqRel,
        Ordering::Relaxed,
    );
}

macro_rules! cmp_hooks {
    ($($name:ident, $const_name:ident: $ty:ty, $len:expr;)*) => {$(
        /// A trace-cmp callback.
        #[cfg(unix)]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(first: $ty, second: $ty) {
            record_int($len, first as u64, second as u64, false);
        }

        /// A trace-cmp callback whose first operand is a constant.
        #[cfg(unix)]
        #[unsafe(no_mangle)]
        pub extern "C" fn $const_name(first: $ty, second: $ty) {
            record_int($len, first as u64, second as u64, true);
        }
    )*};
}

// The sanitizer's comparison callbacks, for C (libdst links this crate)
// and for Rust targets built by `cargo dst-fuzz` alike: one definition.
cmp_hooks! {
    __sanitizer_cov_trace_cmp1, __sanitizer_cov_trace_const_cmp1: u8, 1;
    __sanitizer_cov_trace_cmp2, __sanitizer_cov_trace_const_cmp2: u16, 2;
    __sanitizer_cov_trace_cmp4, __sanitizer_cov_trace_const_cmp4: u32, 4;
    __sanitizer_cov_trace_cmp8, __sanitizer_cov_trace_const_cmp8: u64, 8;
}

/// gcc's float comparison callback (not logged).
#[cfg(unix)]
#[unsafe(no_mangle)]
pub extern "C" fn __sanitizer_cov_trace_cmpf(_first: f32, _second: f32) {}

/// gcc's double comparison callback (not logged).
#[cfg(unix)]
#[unsafe(no_mangle)]
pub extern "C" fn __sanitizer_cov_trace_cmpd(_first: f64, _second: f64) {}

/// A switch: `cases[0]` values of `cases[1]` bits follow.
///
/// # Safety
/// `cases` is the compiler's table for this switch.
#[cfg(unix)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __sanitizer_cov_trace_switch(value: u64, cases: *const u64) {
    // Most runs log nothing: one load, not one per case (the loop over a
    // lexer's cases was 7% of libxml2's harness without a log).
    if cases.is_null() || !active() {
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

#[inline]
fn append(make: impl FnOnce(&mut Entry)) {
    let base = LOG.load(Ordering::Relaxed);
    if base.is_null() {
        return;
    }
    // SAFETY: a validated mapping of SIZE bytes that stays mapped for the
    // process's life; entries are plain bytes at in-bounds slots.
    unsafe {
        let header = &*base.cast::<Header>();
        let slot = header.count.fetch_add(1, Ordering::Relaxed) as usize;
        if slot >= CAPACITY {
            return;
        }
        let entry = &mut *base.add(size_of::<Header>()).cast::<Entry>().add(slot);
        make(entry);
    }
}

/// Records an integer comparison of `len` bytes.
#[inline]
pub fn record_int(len: u8, first: u64, second: u64, first_is_const: bool) {
    if first == second {
        return;
    }
    append(|entry| {
        entry.kind = KIND_INT;
        entry.len = len;
        entry.first_is_const = u8::from(first_is_const);
        entry.first[..8].copy_from_slice(&first.to_le_bytes());
        entry.second[..8].copy_from_slice(&second.to_le_bytes());
    });
}

/// Whether a log is attached (an explorer asked for this run's
/// comparisons): what interposed C comparison functions check first.
#[inline]
pub fn active() -> bool {
    !LOG.load(Ordering::Relaxed).is_null()
}

/// Records a comparison of two byte strings (their first [`MAX_BYTES`]).
#[inline]
pub fn record_bytes(first: &[u8], second: &[u8]) {
    let len = first.len().min(second.len()).min(MAX_BYTES);
    if len == 0 || first[..len] == second[..len] {
        return;
    }
    append(|entry| {
        entry.kind = KIND_BYTES;
        entry.len = len as u8;
        entry.first_is_const = 0;
        entry.first[..len].copy_from_slice(&first[..len]);
        entry.second[..len].copy_from_slice(&second[..len]);
    });
}

/// The log's owner, on the explorer's side: a segment created for one
/// executor, removed with it.
#[cfg(unix)]
pub struct Log {
    base: *mut u8,
    name: std::ffi::CString,
}

#[cfg(unix)]
impl Log {
    /// Creates the segment `name`.
    pub fn create(name: std::ffi::CString) -> std::io::Result<Log> {
        let base = crate::shm::create_mapping(&name, SIZE)?;
        Ok(Log::owning(base, name))
    }

    /// The log over `base`, a fresh zeroed mapping of [`SIZE`] bytes, its
    /// header written.
    fn owning(base: *mut u8, name: std::ffi::CString) -> Log {
        // SAFETY: a fresh mapping of SIZE bytes, ours alone so far.
        unsafe {
            let header = &mut *base.cast::<Header>();
            header.capacity = CAPACITY as u32;
            header.magic = MAGIC;
        }
        Log { base, name }
    }

    /// A log without a name, for this process and the children it forks
    /// ([`attach_local`]): an anonymous shared mapping, so a process that
    /// ends without dropping it (LibAFL's crash handler exits at once)
    /// leaves nothing behind in /dev/shm.
    pub fn anonymous() -> std::io::Result<Log> {
        let base = crate::shm::anonymous_mapping(SIZE, true)?;
        Ok(Log::owning(base, std::ffi::CString::default()))
    }

    /// The name to put in [`ENV`] (empty for an anonymous log).
    pub fn name(&self) -> &std::ffi::CStr {
        &self.name
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping holds a header at its start for `self`'s life.
        unsafe { &*self.base.cast::<Header>() }
    }

    /// Empties the log (before a run).
    pub fn clear(&self) {
        self.header().count.store(0, Ordering::Relaxed);
    }

    /// The entries of the last run, copied out (at most [`CAPACITY`],
    /// whatever the count says).
    pub fn entries(&self) -> Vec<Entry> {
        let count = (self.header().count.load(Ordering::Relaxed) as usize).min(CAPACITY);
        // SAFETY: `count` entries lie inside the mapping after the header;
        // entries are plain bytes, so any contents are a valid `Entry`.
        unsafe {
            std::slice::from_raw_parts(self.base.add(size_of::<Header>()).cast::<Entry>(), count)
        }
        .iter()
        .map(|e| Entry {
            len: e.len.min(MAX_BYTES as u8),
            ..*e
        })
        .collect()
    }
}

#[cfg(unix)]
impl Drop for Log {
    fn drop(&mut self) {
        // Hooks stop writing to it first, if it is this process's log.
        detach_local(self);
        // SAFETY: our mapping and our segment's name.
        unsafe {
            libc::munmap(self.base.cast(), SIZE);
            if !self.name.is_empty() {
                libc::shm_unlink(self.name.as_ptr());
            }
        }
    }
}

// SAFETY: the mapping is owned by the log and read with atomics or copied
// out; moving it between threads moves nothing else.
#[cfg(unix)]
unsafe impl Send for Log {}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// The tests share the process's one log pointer.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn a_local_log_records_only_while_attached() {
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let log = Log::anonymous().unwrap();
        attach_local(&log);
        __sanitizer_cov_trace_const_cmp4(0x2154_5344, 7);
        assert_eq!(log.entries().len(), 1);
        detach_local(&log);
        __sanitizer_cov_trace_const_cmp4(0x2154_5344, 8);
        assert_eq!(log.entries().len(), 1, "nothing is logged once detached");
    }

    #[test]
    fn a_target_records_and_the_owner_reads_back_at_most_the_capacity() {
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let name =
            std::ffi::CString::new(format!("/dst-cmplog-test-{}", std::process::id())).unwrap();
        let log = Log::create(name.clone()).unwrap();
        // SAFETY: the test sets the variable before any thread reads it.
        unsafe { std::env::set_var(ENV, name.to_str().unwrap()) };
        attach_from_env();
        record_int(4, 7, 0x2154_5344, true);
        record_int(2, 5, 5, false); // equal: not worth a replacement
        record_bytes(b"\0\0\0\0", b"DST!");
        let entries = log.entries();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            (entries[0].kind, entries[0].len, entries[0].first_is_const),
            (KIND_INT, 4, 1)
        );
        assert_eq!(
            u64::from_le_bytes(entries[0].second[..8].try_into().unwrap()),
            0x2154_5344
        );
        assert_eq!(&entries[1].second[..4], b"DST!");
        for i in 0..2 * CAPACITY as u64 {
            record_int(8, i, i + 1, false);
        }
        assert_eq!(log.entries().len(), CAPACITY, "the rest are dropped");
        log.clear();
        assert!(log.entries().is_empty());
    }
}
