//! Futex waits and wakes on a 32-bit word of shared memory (the region),
//! between processes: the persistent-mode hand-over of the fork server
//! (`forkserver.rs`, and the process executor on the other side). A run is
//! handed over with one wake and one wait on each side, where a stop and a
//! continue through the server took a dozen system calls and twice the
//! context switches.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Waits while `word` holds `expected`, at most `timeout` (None: no
/// limit). Returns early on a wake, a signal or a changed word; the caller
/// checks the word again.
pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    let spec = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let spec_ptr = spec
        .as_ref()
        .map_or(std::ptr::null(), |s| s as *const libc::timespec);
    // SAFETY: `word` is a valid, aligned 32-bit atomic for the call's
    // duration; a shared (not private) futex, as the word is in memory
    // shared between processes; the timeout is null or a valid timespec.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            spec_ptr,
            std::ptr::null::<u32>(),
            0,
        );
    }
}

/// Wakes every waiter on `word`.
pub fn wake(word: &AtomicU32) {
    // SAFETY: as in `wait`; a wake only reads the address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0,
        );
    }
}
