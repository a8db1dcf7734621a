//! The process executor: the target is another program (a C or C++ service
//! linking libdst, or any binary using the SDK), started once per input with
//! the region in a shared-memory segment named in `DST_REGION`.
//!
//! The segment is private (mode 0600, a unique name) and removed when the
//! executor is dropped. The target's catalog is read from its binary before
//! any run. Targets run without address-space randomization, so that code
//! addresses, and with them edge coverage, repeat from run to run. A fork
//! server, so that setup runs once, comes next.

use std::ffi::{CString, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dst::catalog::SiteInfo;
use dst::region::{Header, Layout, RegionRef};
use dst::shm::{EXIT_BAD_REGION, REGION_ENV};
use dst_kernel::{Outcome, RunRecord, Runner};

use crate::Executor;
use crate::fork::signal_name;

/// Spare site slots beyond the binary's catalog, for sites registered at run
/// time (`dst_fault` names).
const SPARE_SITES: usize = 256;

/// A named POSIX shared-memory segment holding a region.
struct Segment {
    name: CString,
    base: *mut u8,
    len: usize,
    /// Validated once, at creation: later runs must not trust (or panic
    /// over) what a target may have scribbled on the header.
    view: RegionRef,
}

impl Segment {
    fn create(layout: Layout) -> std::io::Result<Segment> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = CString::new(format!("/dst-region-{}-{n}", std::process::id()))
            .expect("no NUL in the name");
        let header = layout.header();
        let len = header.total_size as usize;
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
        // SAFETY: sizing and mapping our own descriptor; results checked.
        let base = unsafe {
            if libc::ftruncate(fd, len as libc::off_t) != 0 {
                let err = std::io::Error::last_os_error();
                libc::close(fd);
                libc::shm_unlink(name.as_ptr());
                return Err(err);
            }
            let base = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            );
            libc::close(fd);
            base
        };
        if base == libc::MAP_FAILED {
            let err = std::io::Error::last_os_error();
            // SAFETY: removing the segment we created.
            unsafe { libc::shm_unlink(name.as_ptr()) };
            return Err(err);
        }
        let base = base.cast::<u8>();
        // SAFETY: the mapping holds `len >= size_of::<Header>()` zeroed bytes.
        unsafe { base.cast::<Header>().write(header) };
        // SAFETY: `base` maps `len` bytes until the segment is dropped.
        let view = unsafe { RegionRef::new(base, len) }.expect("a freshly written header is valid");
        Ok(Segment {
            name,
            base,
            len,
            view,
        })
    }

    fn view(&self) -> RegionRef {
        self.view
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: unmapping and unlinking what `create` made, once.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
            libc::shm_unlink(self.name.as_ptr());
        }
    }
}

/// Runs a program once per input, over a shared-memory region.
pub struct Process {
    program: PathBuf,
    args: Vec<OsString>,
    segment: Segment,
    catalog: Vec<SiteInfo>,
    timeout: Duration,
    flags: u64,
    quiet: bool,
}

impl Process {
    /// An executor for `program args...`; reads its catalog from the binary.
    pub fn new(program: &Path, args: &[OsString], timeout: Duration) -> Result<Process, String> {
        let catalog = crate::elf::catalog(program)?;
        let segment = Segment::create(Layout {
            sites_capacity: catalog.len() + SPARE_SITES,
            coverage_size: 1 << 16,
            ..Layout::default()
        })
        .map_err(|e| format!("cannot create a shared-memory segment for the region: {e}"))?;
        Ok(Process {
            program: program.to_path_buf(),
            args: args.to_vec(),
            segment,
            catalog,
            timeout,
            flags: 0,
            quiet: true,
        })
    }

    /// Whether the target's stdout and stderr are discarded (the default).
    pub fn set_quiet(&mut self, quiet: bool) {
        self.quiet = quiet;
    }

    /// The segment's name, as the target sees it in `DST_REGION`.
    pub fn segment_name(&self) -> String {
        self.segment.name.to_string_lossy().into_owned()
    }
}

impl Runner for Process {
    fn run(&mut self, input: &[u8]) -> RunRecord {
        let view = self.segment.view();
        view.reset(input, self.flags);
        let output = if self.quiet {
            Stdio::null
        } else {
            Stdio::inherit
        };
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env(REGION_ENV, self.segment_name())
            .stdin(Stdio::null())
            .stdout(output())
            .stderr(output());
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure runs in the child between fork and exec and
        // only makes the personality syscall, which is async-signal-safe.
        // Without address randomization, code addresses (so edge coverage)
        // and anything the target derives from pointers repeat across runs.
        unsafe {
            command.pre_exec(|| {
                libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
                Ok(())
            });
        }
        let child = command.spawn();
        let mut child = match child {
            Ok(child) => child,
            Err(e) => {
                let crash = Outcome::Crash {
                    cause: "spawn".into(),
                    message: format!("cannot start {}: {e}", self.program.display()),
                    location: None,
                };
                return RunRecord::read_foreign(view, Some(crash), false, &self.catalog);
            }
        };
        let start = Instant::now();
        let mut pause = Duration::from_micros(50);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if start.elapsed() < self.timeout => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(5));
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            }
        };
        let Some(status) = status else {
            return RunRecord::read_foreign(view, None, true, &self.catalog);
        };
        use std::os::unix::process::ExitStatusExt;
        let crash = match (status.signal(), status.code()) {
            (Some(signal), _) => Some(Outcome::Crash {
                cause: signal_name(signal),
                message: format!("killed by signal {signal}"),
                location: None,
            }),
            (None, Some(EXIT_BAD_REGION)) => Some(Outcome::Crash {
                cause: "region".into(),
                message: "the target rejected the region (see its stderr)".into(),
                location: None,
            }),
            _ => None,
        };
        RunRecord::read_foreign(view, crash, false, &self.catalog)
    }
}

impl Executor for Process {
    fn catalog(&self) -> Vec<SiteInfo> {
        self.catalog.clone()
    }

    fn set_flags(&mut self, flags: u64) {
        self.flags = flags;
    }
}
