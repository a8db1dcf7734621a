//! A region in a shared-memory segment: how a target in its own process (a
//! C or C++ service, or a Rust binary) reaches the region of an explorer's
//! process executor. The executor creates the segment (mode 0600, a unique
//! name) and names it in `DST_REGION`; on the first SDK call the target maps
//! it, validates every header field, and attaches to it. A segment that is
//! missing or has a wrong magic, version or size is one line on stderr and
//! exit status [`EXIT_BAD_REGION`], never a crash or a stray write. Once
//! attached, a crash handler records a fatal signal and its stack in the
//! region.

use std::ffi::CString;

/// The environment variable naming the segment (as for `shm_open`).
pub const REGION_ENV: &str = "DST_REGION";
/// Exit status of a target whose `DST_REGION` could not be used.
pub const EXIT_BAD_REGION: i32 = 86;

fn fail(name: &str, why: impl std::fmt::Display) -> ! {
    eprintln!("dst: {REGION_ENV}={name}: {why}");
    std::process::exit(EXIT_BAD_REGION);
}

/// Attaches to the segment named in `DST_REGION`, if the variable is set.
/// Returns whether it did; exits the process if the segment is unusable.
pub(crate) fn attach_from_env() -> bool {
    let Ok(name) = std::env::var(REGION_ENV) else {
        return false;
    };
    let Ok(cname) = CString::new(name.as_str()) else {
        fail(&name, "the name contains a NUL byte");
    };
    // SAFETY: a NUL-terminated name; the result is checked.
    let fd = unsafe { libc::shm_open(cname.as_ptr(), libc::O_RDWR, 0) };
    if fd < 0 {
        fail(&name, std::io::Error::last_os_error());
    }
    // SAFETY: `stat` is plain data, filled by fstat on our own descriptor.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd, &mut stat) } != 0 {
        fail(&name, std::io::Error::last_os_error());
    }
    let len = stat.st_size as usize;
    if len == 0 {
        fail(&name, "the segment is empty");
    }
    // SAFETY: mapping `len` bytes of our descriptor, shared; checked below.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    // SAFETY: the descriptor is ours; the mapping outlives it.
    unsafe { libc::close(fd) };
    if base == libc::MAP_FAILED {
        fail(&name, std::io::Error::last_os_error());
    }
    // SAFETY: the mapping is `len` bytes, readable and writable, and stays
    // mapped for the life of the process.
    if let Err(err) = unsafe { crate::runtime::attach(base.cast(), len) } {
        fail(&name, err);
    }
    crate::runtime::set_whole_process();
    // SAFETY: `attach` just validated the region at `base`, mapped for good.
    crate::crash::install(unsafe { crate::region::RegionRef::from_validated(base.cast()) });
    true
}
