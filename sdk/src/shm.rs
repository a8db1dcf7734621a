//! A region in a shared-memory segment: how a target in its own process (a
//! C or C++ service, or a Rust binary) reaches the region of an explorer's
//! process executor. The executor creates the segment
//! ([`crate::region::Region::create_segment`]: mode 0600, a unique name) and
//! names it in `DST_REGION`; on the SDK's first call the runtime opens it
//! (`Region::open_segment`), which maps it and validates every header field.
//! A segment that is missing or has a wrong magic, version or size is one
//! line on stderr and exit status [`EXIT_BAD_REGION`], never a crash or a
//! stray write. Once attached, a crash handler records a fatal signal and
//! its stack in the region.

/// The environment variable naming the segment (as for `shm_open`).
pub const REGION_ENV: &str = "DST_REGION";
/// Exit status of a target whose `DST_REGION` could not be used.
pub const EXIT_BAD_REGION: i32 = 86;

/// Maps `len` zeroed bytes of anonymous memory, read and write: shared
/// with the children this process forks (`shared`), or private to it. The
/// caller unmaps it.
#[cfg(unix)]
pub fn anonymous_mapping(len: usize, shared: bool) -> std::io::Result<*mut u8> {
    let sharing = if shared {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    };
    // SAFETY: a fresh anonymous mapping of `len` bytes; no file, no fixed
    // address. The result is checked against MAP_FAILED.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            sharing | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(base.cast())
}

/// Creates the POSIX shared-memory segment `name` (mode 0600; it must not
/// exist yet) of `len` zeroed bytes and maps it, shared. On failure nothing
/// is left behind. The caller unmaps it and unlinks the name.
#[cfg(unix)]
pub fn create_mapping(name: &std::ffi::CStr, len: usize) -> std::io::Result<*mut u8> {
    // SAFETY: a NUL-terminated name; O_EXCL makes the segment ours alone.
    let fd = unsafe {
        libc::shm_open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL,
            0o600,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: sizing and mapping our own descriptor; results checked; on
    // failure the segment we created is removed.
    unsafe {
        let base = if libc::ftruncate(fd, len as libc::off_t) == 0 {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        } else {
            libc::MAP_FAILED
        };
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if base == libc::MAP_FAILED {
            libc::shm_unlink(name.as_ptr());
            return Err(err);
        }
        Ok(base.cast())
    }
}

/// The size of a page.
#[cfg(unix)]
pub fn page_size() -> usize {
    // SAFETY: a query with no arguments.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096).max(1)
}

/// Maps the existing segment `name`, shared, whole: its base and length.
/// The segment stays; the caller unmaps the mapping.
#[cfg(unix)]
pub fn open_mapping(name: &std::ffi::CStr) -> Result<(*mut u8, usize), String> {
    // SAFETY: a NUL-terminated name; the result is checked.
    let fd = unsafe { libc::shm_open(name.as_ptr(), libc::O_RDWR, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    // SAFETY: `stat` is plain data, filled by fstat on our own descriptor;
    // then mapping `len` bytes of it, shared; the descriptor is closed either
    // way and the mapping outlives it.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut stat) != 0 {
            let err = std::io::Error::last_os_error();
            libc::close(fd);
            return Err(err.to_string());
        }
        let len = stat.st_size as usize;
        if len == 0 {
            libc::close(fd);
            return Err("the segment is empty".into());
        }
        let base = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if base == libc::MAP_FAILED {
            return Err(err.to_string());
        }
        Ok((base.cast(), len))
    }
}
