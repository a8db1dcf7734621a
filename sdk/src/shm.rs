//! A region in a shared-memory segment: how a target in its own process (a
//! C or C++ service, or a Rust binary) reaches the region of an explorer's
//! process executor. The executor creates the segment
//! ([`crate::region::Region::create_segment`]: mode 0600, a unique name) and
//! names it in `DST_REGION`; on the SDK's first call the runtime asks
//! `open_from_env` for it, which maps it and validates every header field.
//! A segment that is missing or has a wrong magic, version or size is one
//! line on stderr and exit status [`EXIT_BAD_REGION`], never a crash or a
//! stray write. Once attached, a crash handler records a fatal signal and
//! its stack in the region.

#[cfg(unix)]
use std::ffi::CString;

use crate::region::Region;

/// The environment variable naming the segment (as for `shm_open`).
pub const REGION_ENV: &str = "DST_REGION";
/// Exit status of a target whose `DST_REGION` could not be used.
pub const EXIT_BAD_REGION: i32 = 86;

#[cfg(unix)]
fn fail(name: &str, why: impl std::fmt::Display) -> ! {
    eprintln!("dst: {REGION_ENV}={name}: {why}");
    std::process::exit(EXIT_BAD_REGION);
}

/// The segment named in `DST_REGION`, mapped and validated; `None` when the
/// variable is not set. Exits the process if the segment is unusable.
#[cfg(unix)]
pub(crate) fn open_from_env() -> Option<Region> {
    let name = std::env::var(REGION_ENV).ok()?;
    let Ok(cname) = CString::new(name.as_str()) else {
        fail(&name, "the name contains a NUL byte");
    };
    match Region::open_segment(&cname) {
        Ok(region) => Some(region),
        Err(why) => fail(&name, why),
    }
}

/// No shared memory where there are no processes to share it with (a wasm
/// module reaches its explorer through [`crate::wasm`] instead).
#[cfg(not(unix))]
pub(crate) fn open_from_env() -> Option<Region> {
    None
}
