//! The process executor: the target is another program (a C or C++ service
//! linking libdst, or a Rust binary using the SDK), with the region in a
//! shared-memory segment named in `DST_REGION`.
//!
//! The program is started once as a fork server (`dst::forkserver`: before
//! `main`, or at `setup_complete` with `DST_DEFER=1`) that forks a child per
//! run, or hands the next run to a persistent child (`dst_run`) through the
//! region's `go`/`done` futex words, without the server. A program that does not
//! answer as a fork server (it does not link the SDK) is started once per
//! input instead.
//!
//! The segment is private (mode 0600, a unique name) and removed when the
//! executor is dropped; segments of explorer processes that were killed
//! are removed by the next executor created. The target's catalog is read from its binary before
//! any run. Targets run without address-space randomization, so that code
//! addresses, and with them edge coverage, repeat from run to run. Each run
//! leads its own process group, killed after the run, so processes it left
//! behind cannot write into the next run. A header the target overwrote is
//! restored and reported; a fatal signal is reported with its symbolized
//! stack ([`crate::symbolize`]).

use std::ffi::{CString, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use dst::catalog::SiteInfo;
use dst::forkserver::{CMD_RUN, DEFER_ENV, FORKSERVER_ENV, HELLO};
use dst::futex;
use dst::region::{DONE_EXITED, Header, Layout, Region, RegionRef};
use dst::shm::{EXIT_BAD_REGION, REGION_ENV};
use dst_kernel::{Coverage, End, Executor, Map, Outcome, StandIn};

use crate::symbolize::{self, Symbolizer};

/// Spare site slots beyond the binary's catalog, for sites registered at run
/// time (`dst_fault` names).
const SPARE_SITES: usize = 256;

/// The region, in a named POSIX shared-memory segment.
struct Segment {
    name: CString,
    /// Validated once, at creation: later runs must not trust (or panic
    /// over) what a target may have scribbled on the header.
    region: Region,
    /// The header's layout fields as created, restored before each use.
    layout: Vec<u8>,
}

/// Bytes of the header that describe the layout (everything before the
/// per-run fields).
const LAYOUT_BYTES: usize = std::mem::offset_of!(Header, run_id);

impl Segment {
    fn create(layout: Layout) -> std::io::Result<Segment> {
        remove_stale_segments();
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = CString::new(format!("/dst-region-{}-{n}", std::process::id()))
            .expect("no NUL in the name");
        let mut region = Region::create_segment(&name, layout)?;
        let layout = region.bytes_mut()[..LAYOUT_BYTES].to_vec();
        Ok(Segment {
            name,
            region,
            layout,
        })
    }

    fn view(&self) -> RegionRef<'_> {
        self.region.view()
    }

    /// Puts the header's layout fields back as created (a target may have
    /// written over them); returns whether they had been changed.
    fn restore(&mut self) -> bool {
        // No run is in progress (the run's processes are stopped or dead),
        // so nothing else writes the header now.
        let current = &mut self.region.bytes_mut()[..LAYOUT_BYTES];
        let changed = current != self.layout.as_slice();
        if changed {
            current.copy_from_slice(&self.layout);
        }
        changed
    }
}

/// Removes the segments of explorer processes that died without removing
/// theirs (killed, or crashed): `/dst-region-PID-N` whose PID is gone.
fn remove_stale_segments() {
    let Ok(entries) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("dst-region-")) else {
            continue;
        };
        let Some(pid) = rest
            .split('-')
            .next()
            .and_then(|p| p.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone && let Ok(cname) = CString::new(format!("/{}", name.to_string_lossy())) {
            // SAFETY: removing a segment name; its owner is dead.
            unsafe { libc::shm_unlink(cname.as_ptr()) };
        }
    }
}

/// How the target's runs are started.
enum Launch {
    /// Not started yet: try a fork server first.
    Unknown,
    /// One process per input.
    Spawn,
    /// A fork server: one fork (or persistent resume) per input.
    Server(Server),
}

/// A running fork server.
struct Server {
    process: Child,
    /// Write end of the command pipe.
    ctl: File,
    /// Read end of the status pipe.
    status: File,
    /// A persistent child waits for the next run.
    child_waiting: bool,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: killing our own child (the server) and its run group, if any.
        unsafe { libc::kill(self.process.id() as libc::pid_t, libc::SIGKILL) };
        let _ = self.process.wait();
    }
}

/// How one run ended.
enum Ended {
    Status(ExitStatus),
    /// The persistent child finished its run and waits for the next.
    Waiting,
    TimedOut,
    /// The fork server itself failed (message).
    ServerFailed(String),
    SpawnFailed(String),
}

/// Waits until `file` is readable, for up to `timeout`.
fn readable(file: &File, timeout: Duration) -> bool {
    let mut poll = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = left.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut poll, 1, ms) };
        if n > 0 {
            return true;
        }
        if n == 0
            || (n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted)
        {
            return false;
        }
    }
}

fn read_word(file: &mut File, timeout: Duration) -> Option<u32> {
    if !readable(file, timeout) {
        return None;
    }
    let mut word = [0u8; 4];
    file.read_exact(&mut word).ok()?;
    Some(u32::from_le_bytes(word))
}

/// A pipe as (read end, write end), close-on-exec.
fn pipe() -> std::io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors; checked.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: two fresh descriptors, owned by the files from now on.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// In the target between fork and exec: no address randomization, so code
/// addresses (so edge coverage) and anything the target derives from
/// pointers repeat across runs; its own process group, so whatever it
/// starts is killed with it.
///
/// # Safety
/// Only between fork and exec (async-signal-safe calls).
unsafe fn before_exec() {
    // SAFETY: the caller's contract; both calls concern this process alone.
    unsafe {
        libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
        libc::setpgid(0, 0);
    }
}

/// Descriptors of the fork server's pipes in the target (as AFL's).
const SERVER_CTL_FD: i32 = 198;
const SERVER_STATUS_FD: i32 = 199;

/// How long a starting fork server may take to answer, at least.
const SERVER_START: Duration = Duration::from_secs(10);
/// A wait for a run's end looks at the fork server this often.
const SLICE: Duration = Duration::from_millis(100);

/// Runs a program over a shared-memory region: through a fork server when
/// the program starts one, else once per input.
pub struct Process {
    program: PathBuf,
    args: Vec<OsString>,
    segment: Segment,
    catalog: Vec<SiteInfo>,
    timeout: Duration,
    flags: u64,
    quiet: bool,
    defer: bool,
    use_server: bool,
    launch: Launch,
    /// The fork server's layout, for symbolizing crashes.
    symbolizer: Option<Symbolizer>,
    /// Extra environment of the program.
    env: Vec<(OsString, OsString)>,
    /// Bytes of the coverage map the program uses: all of it, unless its
    /// fork server says less.
    coverage_used: usize,
    /// Decision coverage is in the program's map with its edges.
    no_decisions: StandIn,
    /// What the program compared in its last run (`dst::cmplog`), named
    /// in `DST_CMPLOG`; libdst's hooks write it when the program has them.
    cmplog: Option<dst::cmplog::Log>,
}

impl Process {
    /// An executor for `program args...`; reads its catalog from the binary
    /// ([`crate::elf::program_catalog`]).
    pub fn new(program: &Path, args: &[OsString], timeout: Duration) -> Result<Process, String> {
        let catalog = crate::elf::program_catalog(program)?;
        Process::with_catalog(program, args, timeout, catalog)
    }

    /// An executor for `program args...` whose catalog was read already.
    pub fn with_catalog(
        program: &Path,
        args: &[OsString],
        timeout: Duration,
        catalog: Vec<SiteInfo>,
    ) -> Result<Process, String> {
        let segment = Segment::create(Layout {
            sites_capacity: catalog.len() + SPARE_SITES,
            coverage_size: 1 << 16,
            ..Layout::default()
        })
        .map_err(|e| format!("cannot create a shared-memory segment for the region: {e}"))?;
        let coverage_used = segment.view().sections().coverage_size;
        // Named after the region, so stale ones are removed with it.
        let cmplog = CString::new(format!("{}-cmp", segment.name.to_string_lossy()))
            .ok()
            .and_then(|name| dst::cmplog::Log::create(name).ok());
        Ok(Process {
            program: program.to_path_buf(),
            args: args.to_vec(),
            segment,
            catalog,
            timeout,
            flags: 0,
            quiet: true,
            defer: false,
            use_server: true,
            launch: Launch::Unknown,
            symbolizer: None,
            env: Vec::new(),
            coverage_used,
            no_decisions: StandIn::default(),
            cmplog,
        })
    }

    /// Whether the target's stdout and stderr are discarded (the default).
    pub fn set_quiet(&mut self, quiet: bool) {
        self.quiet = quiet;
    }

    /// Start the fork server at `setup_complete` (`DST_DEFER=1`) rather
    /// than before `main`.
    pub fn set_defer(&mut self, defer: bool) {
        self.defer = defer;
        self.launch = Launch::Unknown;
    }

    /// Sets a variable in the program's environment (for runs started after
    /// this call: set it before the first run).
    pub fn set_env(&mut self, key: impl Into<OsString>, value: impl Into<OsString>) {
        self.env.push((key.into(), value.into()));
    }

    /// Whether to try a fork server at all (default: yes).
    pub fn set_fork_server(&mut self, on: bool) {
        self.use_server = on;
        self.launch = Launch::Unknown;
    }

    /// `"fork server"` or `"one process per run"`, once the first run has
    /// settled it; `"not started"` before.
    pub fn launch_mode(&self) -> &'static str {
        match self.launch {
            Launch::Unknown => "not started",
            Launch::Spawn => "one process per run",
            Launch::Server(_) => "fork server",
        }
    }

    /// The segment's name, as the target sees it in `DST_REGION`.
    pub fn segment_name(&self) -> String {
        self.segment.name.to_string_lossy().into_owned()
    }

    fn command(&self) -> Command {
        let output = if self.quiet {
            Stdio::null
        } else {
            Stdio::inherit
        };
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env(REGION_ENV, self.segment_name())
            .envs(
                self.cmplog
                    .iter()
                    .map(|log| (dst::cmplog::ENV, log.name().to_string_lossy().into_owned())),
            )
            // Resolve every symbol at load, once, in the fork server, rather
            // than lazily in every child (as AFL++ does).
            .env("LD_BIND_NOW", "1")
            .stdin(Stdio::null())
            .stdout(output())
            .stderr(output());
        if self.defer {
            command.env(DEFER_ENV, "1");
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// Starts the program as a fork server and waits for its greeting.
    fn start_server(&mut self) -> Result<Server, String> {
        let (ctl_read, ctl_write) = pipe().map_err(|e| format!("pipe: {e}"))?;
        let (status_read, status_write) = pipe().map_err(|e| format!("pipe: {e}"))?;
        let (ctl_fd, status_fd) = (ctl_read.as_raw_fd(), status_write.as_raw_fd());
        let mut command = self.command();
        command.env(
            FORKSERVER_ENV,
            format!("{SERVER_CTL_FD},{SERVER_STATUS_FD}"),
        );
        // SAFETY: the closure runs in the child between fork and exec and
        // only makes async-signal-safe calls (dup2, personality, setpgid).
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(ctl_fd, SERVER_CTL_FD) < 0
                    || libc::dup2(status_fd, SERVER_STATUS_FD) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                before_exec();
                // The server (and through it each run) dies with us.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        // Before the reset of the first run: setup sees an empty input.
        self.segment.restore();
        self.segment.view().reset(&[], self.flags);
        let process = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.program.display()))?;
        drop(ctl_read);
        drop(status_write);
        let mut server = Server {
            process,
            ctl: ctl_write,
            status: status_read,
            child_waiting: false,
        };
        match read_word(&mut server.status, self.timeout.max(SERVER_START)) {
            Some(HELLO) => {
                let size = self.segment.view().sections().coverage_size;
                let extent = read_word(&mut server.status, SERVER_START).unwrap_or(0) as usize;
                self.coverage_used = if extent == 0 || extent >= size {
                    size
                } else {
                    extent.next_multiple_of(64).min(size)
                };
                let modules = symbolize::read_maps(server.process.id());
                self.symbolizer = Some(Symbolizer::new(modules));
                Ok(server)
            }
            Some(_) => Err("the fork server sent a wrong greeting".into()),
            None => Err("the program did not start a fork server".into()),
        }
    }

    fn run_spawned(&mut self) -> Ended {
        let mut command = self.command();
        // SAFETY: the closure runs in the child between fork and exec and
        // only makes async-signal-safe calls.
        unsafe {
            command.pre_exec(|| {
                before_exec();
                Ok(())
            });
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                return Ended::SpawnFailed(format!("cannot start {}: {e}", self.program.display()));
            }
        };
        let pid = child.id() as libc::pid_t;
        let start = Instant::now();
        let mut pause = Duration::from_micros(50);
        let ended = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ended::Status(status),
                Ok(None) if start.elapsed() < self.timeout => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(5));
                }
                _ => {
                    // SAFETY: killing the run's own process group.
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                    let _ = child.kill();
                    let _ = child.wait();
                    break Ended::TimedOut;
                }
            }
        };
        // SAFETY: whatever the run left in its group is killed.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        ended
    }

    /// One run through the fork server: posts the run's number in the
    /// region's `go` word, then wakes a persistent child that waits there
    /// or asks the server for a fresh child, then waits on the region's
    /// `done` word for the child to finish the run (a persistent child then
    /// waits for the next) or for the server to report that it ended (its
    /// wait status is in the header), at most the run's time limit. No
    /// pipe is read per run.
    fn run_served(&mut self) -> Ended {
        let Launch::Server(server) = &mut self.launch else {
            unreachable!("run_served without a server");
        };
        let header = self.segment.region.view().header();
        let run = header.go.load(Ordering::Relaxed).wrapping_add(1) & !DONE_EXITED;
        header.done.store(0, Ordering::Relaxed);
        header.go.store(run, Ordering::Release);
        if std::mem::take(&mut server.child_waiting) {
            futex::wake(&header.go);
        } else {
            header.pid.store(0, Ordering::Relaxed);
            if server.ctl.write_all(&CMD_RUN.to_le_bytes()).is_err() {
                return Ended::ServerFailed("the fork server is gone".into());
            }
        }
        let deadline = Instant::now() + self.timeout;
        let mut timed_out = false;
        let mut killed_at = None;
        loop {
            let done = header.done.load(Ordering::Acquire);
            if done == run {
                server.child_waiting = true;
                return Ended::Waiting;
            }
            if done == DONE_EXITED | run {
                break;
            }
            let now = Instant::now();
            if !timed_out && now >= deadline {
                timed_out = true;
                killed_at = Some(now);
                let pid = header.pid.load(Ordering::Acquire) as libc::pid_t;
                if pid > 0 {
                    // SAFETY: killing the run (its own process group, and the
                    // child itself in case it has not set its group yet).
                    unsafe {
                        libc::kill(-pid, libc::SIGKILL);
                        libc::kill(pid, libc::SIGKILL);
                    }
                }
            }
            if killed_at.is_some_and(|t| now.duration_since(t) >= SERVER_START) {
                return Ended::ServerFailed("the fork server stopped answering".into());
            }
            let left = if timed_out {
                SLICE
            } else {
                deadline.saturating_duration_since(now).min(SLICE)
            };
            // In slices, so that a server that died is noticed (looked at
            // only when a slice passed with no news).
            futex::wait(&header.done, done, Some(left));
            if header.done.load(Ordering::Acquire) == done
                && matches!(server.process.try_wait(), Ok(Some(_)))
            {
                return Ended::ServerFailed("the fork server died".into());
            }
        }
        let pid = header.pid.load(Ordering::Relaxed) as libc::pid_t;
        let status = header.wait_status.load(Ordering::Relaxed) as i32;
        // SAFETY: whatever the run left in its group is killed.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        if timed_out {
            Ended::TimedOut
        } else {
            Ended::Status(ExitStatus::from_raw(status))
        }
    }

    /// The crash the handler recorded in the region, symbolized.
    fn crash(&mut self, signal: i32) -> Outcome {
        let header = self.segment.view().header();
        let mut unmapped = Symbolizer::new(Vec::new());
        let symbolizer = self.symbolizer.as_mut().unwrap_or(&mut unmapped);
        symbolize::recorded_crash(header, signal, symbolizer)
    }
}

impl Process {
    /// Starts the program (its fork server, or settles on one process per
    /// run) if that has not happened yet; runs do it themselves.
    pub fn start(&mut self) {
        if matches!(self.launch, Launch::Unknown) {
            self.coverage_used = self.segment.view().sections().coverage_size;
            // A fork server may lower `coverage_used` when it greets.
            self.launch = if self.use_server {
                match self.start_server() {
                    Ok(server) => Launch::Server(server),
                    Err(_) => Launch::Spawn,
                }
            } else {
                Launch::Spawn
            };
        }
    }

    /// Runs one input; returns the crash, if any, and whether the run timed
    /// out.
    fn run_once(&mut self, input: &[u8]) -> (Option<Outcome>, bool) {
        self.start();
        self.segment.restore();
        self.segment
            .view()
            .reset_covering(input, self.flags, self.coverage_used);
        if let Some(log) = &self.cmplog {
            log.clear();
        }
        let ended = match self.launch {
            Launch::Server(_) => self.run_served(),
            _ => self.run_spawned(),
        };
        let overwritten = self.segment.restore();
        let (crash, timed_out) = match ended {
            Ended::Waiting => (None, false),
            Ended::TimedOut => (None, true),
            Ended::SpawnFailed(message) => (
                Some(Outcome::Crash {
                    cause: "spawn".into(),
                    message,
                    location: None,
                }),
                false,
            ),
            Ended::ServerFailed(message) => {
                // Start a new server for the next run.
                self.launch = Launch::Unknown;
                (
                    Some(Outcome::Crash {
                        cause: "fork server".into(),
                        message,
                        location: None,
                    }),
                    false,
                )
            }
            Ended::Status(status) => match (status.signal(), status.code()) {
                (Some(signal), _) => (Some(self.crash(signal)), false),
                (None, Some(EXIT_BAD_REGION)) => (
                    Some(Outcome::Crash {
                        cause: "region".into(),
                        message: "the target rejected the region (see its stderr)".into(),
                        location: None,
                    }),
                    false,
                ),
                _ => (None, false),
            },
        };
        // A run that wrote over the header is reported as such whatever else
        // it did afterwards (crash on the garbage, hang, exit): that write
        // is the bug, and the same input does it again on replay.
        if overwritten {
            let crash = Outcome::Crash {
                cause: "region".into(),
                message: "the target overwrote the region's header".into(),
                location: None,
            };
            return (Some(crash), false);
        }
        (crash, timed_out)
    }
}

impl Executor for Process {
    fn execute(&mut self, input: &[u8]) -> End {
        match self.run_once(input) {
            (_, true) => End::Timeout,
            (Some(crash), false) => End::Crash(crash),
            (None, false) => End::Ok,
        }
    }

    /// The region of the last run (its header restored if the run wrote
    /// over it).
    fn region(&self) -> RegionRef<'_> {
        self.segment.view()
    }

    fn catalog(&self) -> &[SiteInfo] {
        &self.catalog
    }

    /// Edges: the part of the coverage map the program uses, all of it or
    /// the densely numbered edges (clang's trace-pc-guard) its fork server
    /// reported, after the decision window (so the program is started
    /// first). Decisions are in that map too: a stand-in.
    fn coverage(&mut self) -> Coverage<'_> {
        self.start();
        let (ptr, len) = self.segment.view().coverage_ptr();
        debug_assert!(self.coverage_used <= len);
        Coverage {
            // SAFETY: the segment's coverage section, mapped for the life of
            // `self` at a fixed address, written only by the program's runs;
            // `coverage_used` never exceeds it.
            edges: unsafe { Map::from_raw_parts(ptr, self.coverage_used.max(1)) },
            decisions: self.no_decisions.map(),
        }
    }

    fn flags(&self) -> u64 {
        self.flags
    }

    fn set_flags(&mut self, flags: u64) {
        self.flags = flags;
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout)
    }

    fn ends_overdue_runs(&self) -> bool {
        true
    }

    fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    fn comparisons(&self) -> Vec<dst::cmplog::Entry> {
        self.cmplog
            .as_ref()
            .map_or_else(Vec::new, |log| log.entries())
    }
}
