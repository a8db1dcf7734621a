//! The application kernel: Linux's system calls for an unmodified program,
//! answered over dst's world, deterministically (gVisor's Sentry is the
//! model: Linux's system-call surface as a user-space kernel).
//!
//! A front runs the program's instructions and hands each system call it
//! does not own to [`Kernel::call`], with the program's memory as a
//! [`Guest`]. The riscv emulator is the first front
//! (`crate::riscv::machine`); it keeps what touches its scheduler or takes
//! decisions (threads, `futex`, sleeping, clocks, `getrandom`, `exit`),
//! the kernel the rest: the address space (`brk`, `mmap`, `mprotect`,
//! ...), descriptors and their reads and writes, the signal table, and the
//! facts a runtime asks at start-up (one CPU, pid 1, uid 0, its limits).
//!
//! Deterministic by construction: every value returned here is a function
//! of the calls made before it (addresses grow from fixed bases, the
//! process has one CPU), so the same input replays the same answers.
//!
//! What is not here yet answers as Linux answers a missing feature
//! (ENOENT for a path, ENOSYS for a call) where a runtime copes with that,
//! and otherwise ends the run as a finding naming the call
//! ([`Outcome::Unsupported`]): a `ppoll` that would block, a file mapped.
//!
//! Written here rather than taken from a crate: the models (gVisor,
//! Shadow) are programs, not libraries an emulator can call.

mod files;
pub mod io;
pub mod net;
mod signals;

pub(crate) use dst::world::clock::EPOCH_NS;
pub use files::Disk;

pub use signals::{Cause, Regs, SA_RESTART, SigAction, Signals, TRAMPOLINE};

/// Page size of the guest.
pub const PAGE: u64 = 4096;
/// Where anonymous mappings are placed, growing up.
pub const MMAP_BASE: u64 = 0x2000_0000_0000;
/// The main thread's stack size (`RLIMIT_STACK`).
pub const STACK_SIZE: u64 = 8 << 20;
/// Descriptors a process may hold (`RLIMIT_NOFILE`).
pub const MAX_FILES: u64 = 1024;

/// Page protection bits, as Linux's `PROT_*`.
pub const READ: u8 = 1;
pub const WRITE: u8 = 2;
pub const EXEC: u8 = 4;

// Linux's error numbers, negated as system calls return them.
pub const ENOENT: i64 = -2;
pub const EBADF: i64 = -9;
pub const ENOMEM: i64 = -12;
pub const EFAULT: i64 = -14;
pub const EINVAL: i64 = -22;
pub const ENOTTY: i64 = -25;
pub const ESPIPE: i64 = -29;
pub const ENOSYS: i64 = -38;
pub const EAGAIN: i64 = -11;

/// What the kernel needs of the program's memory (the front's).
pub trait Guest {
    /// Reads `out.len()` bytes at `at`; `Err` names an address that is
    /// not readable.
    fn read(&self, at: u64, out: &mut [u8]) -> Result<(), u64>;
    /// Writes `bytes` at `at`; `Err` names an address that is not
    /// writable.
    fn write(&mut self, at: u64, bytes: &[u8]) -> Result<(), u64>;
    /// The NUL-terminated string at `at`, at most `max` bytes.
    fn c_string(&self, at: u64, max: usize) -> Result<Vec<u8>, u64>;
    /// Maps zeroed pages over `start..start + len` with `prot`.
    fn map(&mut self, start: u64, len: u64, prot: u8);
    fn unmap(&mut self, start: u64, len: u64);
    /// Sets the protection of mapped pages; `false` when one is missing.
    fn protect(&mut self, start: u64, len: u64, prot: u8) -> bool;
    /// Zeroes mapped pages (`MADV_DONTNEED`).
    fn zero(&mut self, start: u64, len: u64);

    /// A little-endian integer of `N` bytes at `at`.
    fn load<const N: usize>(&self, at: u64) -> Result<u64, u64> {
        debug_assert!(N <= 8);
        let mut bytes = [0u8; 8];
        self.read(at, &mut bytes[..N])?;
        Ok(u64::from_le_bytes(bytes))
    }
}

/// What a call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The result the program sees (a negated errno on failure).
    Return(i64),
    /// A signal whose action ends the process (the front reports it).
    Killed(i32),
    /// The kernel lacks the call (`None`) or this use of it.
    Unsupported(Option<&'static str>),
    /// Not the kernel's: the front's own call (threads, clocks, ...).
    NotMine,
    /// `len` decided bytes go to `at` (`/dev/urandom`), and the call
    /// returns `len`: the front takes the decision.
    Random { at: u64, len: u64 },
    /// The call waits: until a file's readiness changes
    /// ([`Kernel::take_woken`]) or, if any, until `deadline` (virtual
    /// nanoseconds). The front blocks the thread and makes the same call
    /// again when it wakes: the kernel remembers the wait's deadline for
    /// that thread and place ([`Context`]), so the second call times out.
    Block { deadline: Option<u64> },
}

/// Who makes a call, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    /// The calling thread.
    pub tid: u64,
    /// Where its call is (a blocked call is made again from there).
    pub pc: u64,
    /// Virtual nanoseconds (monotonic).
    pub now: u64,
}

/// An open file description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum File {
    /// Standard input: always at its end.
    Stdin,
    /// Standard output or error: captured by the kernel.
    Stdout,
    Stderr,
    /// The read or write end of pipe `pipes[n]`.
    PipeRead(usize),
    PipeWrite(usize),
    /// An eventfd: its counter is `events[n]`.
    Event(usize),
    /// An epoll instance: its interest list is `epolls[n]`.
    Epoll(usize),
    /// A file or directory of the file system, at an offset.
    Disk(Disk),
    /// `/dev/null`, and `/dev/urandom` (its bytes are decisions).
    Null,
    Random,
    /// Socket `net.sockets[n]`.
    Socket(usize),
}

/// A descriptor: its file and status flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Open {
    pub file: File,
    /// `O_NONBLOCK`: a call that would wait fails with EAGAIN.
    pub nonblock: bool,
}

/// One process's kernel state.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// The end of the heap (`brk`).
    pub brk: u64,
    /// Where the next anonymous mapping goes.
    pub mmap_next: u64,
    /// What the program wrote to its standard output and error.
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The descriptor table: `files[fd]`.
    pub files: Vec<Option<Open>>,
    /// Signal actions, masks and alternate stacks.
    pub signals: Signals,
    /// Pipes, eventfds and epoll instances (`io`).
    pub io: io::Io,
    /// Sockets (`net`).
    pub net: net::Net,
    /// Calls that blocked: by thread, where and until when.
    restarts: std::collections::BTreeMap<u64, (u64, Option<u64>)>,
    /// Resource limits set by the program (the rest are `limits`').
    limits: std::collections::BTreeMap<u64, (u64, u64)>,
    /// The node's file system, and the working directory in it.
    pub fs: dst::world::fs::Fs,
    pub cwd: dst::world::fs::Ino,
    /// The node has a disk (it was given files): the world may crash it
    /// at a call that touches them ([`Kernel::crash_point`]).
    pub crashable: bool,
    /// Paths of files that belong to the world, not to the node (a
    /// workload's history): every write to them is durable at once, so no
    /// crash loses a line.
    pub world_files: Vec<String>,
    /// The open files of `world_files`, by inode.
    world_inos: Vec<dst::world::fs::Ino>,
}

fn align(value: u64, to: u64) -> u64 {
    value.div_ceil(to) * to
}

/// A result written to guest memory: 0, or EFAULT.
fn written(r: Result<(), u64>) -> i64 {
    if r.is_ok() { 0 } else { EFAULT }
}

impl Kernel {
    /// A process whose heap starts at `brk`, with standard input, output
    /// and error open.
    pub fn new(brk: u64) -> Kernel {
        debug_assert_eq!(brk % PAGE, 0, "the heap starts on a page");
        Kernel {
            brk,
            mmap_next: MMAP_BASE,
            stdout: Vec::new(),
            stderr: Vec::new(),
            files: [File::Stdin, File::Stdout, File::Stderr]
                .into_iter()
                .map(|file| {
                    Some(Open {
                        file,
                        nonblock: false,
                    })
                })
                .collect(),
            signals: Signals::default(),
            io: io::Io::default(),
            net: net::Net::default(),
            restarts: Default::default(),
            limits: Default::default(),
            fs: Default::default(),
            cwd: dst::world::fs::ROOT,
            crashable: false,
            world_files: Vec::new(),
            world_inos: Vec::new(),
        }
    }

    fn file(&self, fd: u64) -> Option<&File> {
        self.open(fd).map(|o| &o.file)
    }

    fn open(&self, fd: u64) -> Option<&Open> {
        self.files.get(fd as usize).and_then(Option::as_ref)
    }

    /// A new descriptor for `file`, the lowest free one.
    /// Installs two new files and writes their descriptors (two `int`s)
    /// at `at`, as `pipe2` and `socketpair` return them; on failure neither
    /// stays open.
    fn install_pair(
        &mut self,
        guest: &mut impl Guest,
        [first, second]: [File; 2],
        nonblock: bool,
        at: u64,
    ) -> i64 {
        let one = self.install(first, nonblock);
        let two = self.install(second, nonblock);
        if one < 0 || two < 0 {
            for fd in [one, two] {
                if fd >= 0 {
                    self.close(fd as u64);
                }
            }
            return -24; // EMFILE
        }
        let mut fds = [0u8; 8];
        fds[..4].copy_from_slice(&(one as i32).to_le_bytes());
        fds[4..].copy_from_slice(&(two as i32).to_le_bytes());
        if guest.write(at, &fds).is_err() {
            self.close(one as u64);
            self.close(two as u64);
            return EFAULT;
        }
        0
    }

    fn install(&mut self, file: File, nonblock: bool) -> i64 {
        let at = (0..self.files.len())
            .find(|&i| self.files[i].is_none())
            .unwrap_or(self.files.len());
        if at as u64 >= MAX_FILES {
            self.release(&file);
            return -24; // EMFILE
        }
        if self.files.len() <= at {
            self.files.resize(at + 1, None);
        }
        self.files[at] = Some(Open { file, nonblock });
        at as i64
    }

    /// Whether some file's readiness changed since the last call (the
    /// front then wakes the threads blocked in [`Outcome::Block`]).
    pub fn take_woken(&mut self) -> bool {
        std::mem::take(&mut self.io.changed) | std::mem::take(&mut self.net.changed)
    }

    /// One more descriptor points at `file`.
    fn share(&mut self, file: &File) {
        match *file {
            File::Socket(id) => self.net.share(id),
            _ => self.io.share(file),
        }
    }

    /// A descriptor pointing at `file` was closed.
    fn release(&mut self, file: &File) {
        match *file {
            File::Socket(id) => self.net.close(id),
            _ => self.io.close(file),
        }
    }

    /// Thread `tid`'s waiting call was interrupted by a signal: a call it
    /// makes next starts its own wait.
    pub fn interrupted(&mut self, tid: u64) {
        self.restarts.remove(&tid);
    }

    /// The call of `ctx` waits, at most `timeout` nanoseconds (`None`:
    /// until a file is ready); the same call made again after the wake
    /// keeps the first call's deadline, and returns 0 once it passed.
    fn wait(&mut self, ctx: &Context, timeout: Option<u64>) -> Outcome {
        let deadline = match self.restarts.get(&ctx.tid) {
            Some(&(pc, deadline)) if pc == ctx.pc => deadline,
            _ => timeout.map(|t| ctx.now.saturating_add(t)),
        };
        if deadline.is_some_and(|d| ctx.now >= d) {
            self.restarts.remove(&ctx.tid);
            return Outcome::Return(0);
        }
        self.restarts.insert(ctx.tid, (ctx.pc, deadline));
        Outcome::Block { deadline }
    }

    /// System call `number` (riscv64's asm-generic numbering) made in
    /// `ctx`, with arguments `a`.
    pub fn call(
        &mut self,
        guest: &mut impl Guest,
        ctx: Context,
        number: u64,
        a: [u64; 6],
    ) -> Outcome {
        let outcome = self.dispatch(guest, &ctx, number, a);
        if !matches!(outcome, Outcome::Block { .. }) && !self.restarts.is_empty() {
            self.restarts.remove(&ctx.tid);
        }
        outcome
    }

    fn dispatch(
        &mut self,
        guest: &mut impl Guest,
        ctx: &Context,
        number: u64,
        a: [u64; 6],
    ) -> Outcome {
        let tid = ctx.tid;
        if let Some(outcome) = self.file_call(guest, ctx, number, a) {
            return outcome;
        }
        if let Some(outcome) = self.socket_call(guest, ctx, number, a) {
            return outcome;
        }
        let r = match number {
            19 => {
                // eventfd2(initial, flags): EFD_SEMAPHORE 1, EFD_NONBLOCK 0o4000
                let n = self.io.eventfd(a[0], a[1] & 1 != 0);
                self.install(File::Event(n), a[1] & 0o4000 != 0)
            }
            20 => {
                // epoll_create1(flags)
                let n = self.io.epoll();
                self.install(File::Epoll(n), false)
            }
            21 => return self.epoll_ctl(guest, a),
            22 => return self.epoll_pwait(guest, ctx, a),
            59 => {
                // pipe2(fds, flags): O_NONBLOCK 0o4000
                let n = self.io.pipe();
                let files = [File::PipeRead(n), File::PipeWrite(n)];
                self.install_pair(guest, files, a[1] & 0o4000 != 0, a[0])
            }
            23 => self.dup(a[0], 0),
            24 => {
                // dup3(old, new, flags)
                if a[0] == a[1] || self.file(a[0]).is_none() || a[1] >= MAX_FILES {
                    if a[0] == a[1] { EINVAL } else { EBADF }
                } else {
                    let open = self.open(a[0]).cloned();
                    if let Some(open) = &open {
                        self.share(&open.file);
                    }
                    self.close(a[1]);
                    if self.files.len() <= a[1] as usize {
                        self.files.resize(a[1] as usize + 1, None);
                    }
                    self.files[a[1] as usize] = open;
                    a[1] as i64
                }
            }
            25 => self.fcntl(a[0], a[1], a[2]),
            29 => {
                // ioctl: nothing here is a terminal
                if self.file(a[0]).is_some() {
                    ENOTTY
                } else {
                    EBADF
                }
            }
            57 => self.close(a[0]),
            63 => return self.read(guest, ctx, a[0], a[1], a[2]),
            64 => return self.write(guest, ctx, a[0], a[1], a[2]),
            65 => return self.vectored(guest, ctx, a, false), // readv
            66 => return self.vectored(guest, ctx, a, true),  // writev
            73 => return self.ppoll(guest, ctx, a),
            99 => 0, // set_robust_list: nothing to clean up without processes
            114 => {
                // clock_getres: a nanosecond
                if a[1] == 0 {
                    0
                } else {
                    written(guest.write(a[1], &[0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]))
                }
            }
            122 => 0, // sched_setaffinity: there is one CPU anyway
            123 => {
                // sched_getaffinity(pid, size, mask): CPU 0 alone; the
                // kernel's answer is the mask's size in bytes.
                if a[1] < 8 || !a[1].is_multiple_of(8) {
                    EINVAL
                } else {
                    let mut mask = vec![0u8; a[1].min(1024) as usize];
                    mask[0] = 1;
                    match guest.write(a[2], &mask) {
                        Ok(()) => 8,
                        Err(_) => EFAULT,
                    }
                }
            }
            129..=132 | 134..=136 => {
                return self.signals.call(guest, tid, number, a);
            }
            160 => {
                // uname: six 65-byte fields
                let mut buf = [0u8; 65 * 6];
                for (i, field) in ["Linux", "dst", "6.1.0", "#1", "riscv64", ""]
                    .iter()
                    .enumerate()
                {
                    buf[65 * i..65 * i + field.len()].copy_from_slice(field.as_bytes());
                }
                written(guest.write(a[0], &buf))
            }
            163 => {
                // getrlimit(resource, rlim)
                let (soft, hard) = self.limit(a[0]);
                written(guest.write(a[1], &pair(soft, hard)))
            }
            164 => {
                // setrlimit(resource, rlim)
                let (Ok(soft), Ok(hard)) = (guest.load::<8>(a[1]), guest.load::<8>(a[1] + 8))
                else {
                    return Outcome::Return(EFAULT);
                };
                self.set_limit(a[0], soft, hard)
            }
            165 => {
                // getrusage: nothing measured (time is the world's)
                written(guest.write(a[1], &[0u8; 144]))
            }
            166 => 0o22,    // umask: the old mask
            167 => 0,       // prctl: names and the like, accepted
            172 => 1,       // getpid
            173 => 0,       // getppid
            174..=177 => 0, // getuid, geteuid, getgid, getegid: root
            214 => {
                // brk
                if a[0] > self.brk && a[0] < self.brk + (1 << 30) {
                    let start = self.brk;
                    guest.map(start, a[0] - start, READ | WRITE);
                    self.brk = a[0];
                }
                self.brk as i64
            }
            215 => {
                // munmap
                if !a[0].is_multiple_of(PAGE) {
                    EINVAL
                } else {
                    guest.unmap(a[0], align(a[1], PAGE));
                    0
                }
            }
            216 => ENOMEM, // mremap: the caller copies instead
            222 => return self.mmap(guest, a),
            226 => {
                // mprotect
                let prot = a[2] as u8 & (READ | WRITE | EXEC);
                if !a[0].is_multiple_of(PAGE) {
                    EINVAL
                } else if guest.protect(a[0], align(a[1], PAGE), prot) {
                    0
                } else {
                    ENOMEM
                }
            }
            227 | 228 => 0, // msync, mlock: memory is memory
            232 => {
                // mincore: every page resident
                let pages = align(a[1], PAGE) / PAGE;
                written(guest.write(a[2], &vec![1u8; pages.min(1 << 20) as usize]))
            }
            233 => {
                // madvise: MADV_DONTNEED reads back zeroes
                if a[2] == 4 {
                    guest.zero(a[0], align(a[1], PAGE));
                }
                0
            }
            261 => {
                // prlimit64(pid, resource, new, old)
                if !matches!(a[0], 0 | 1) {
                    return Outcome::Return(-3); // ESRCH
                }
                if a[3] != 0 {
                    let (soft, hard) = self.limit(a[1]);
                    if guest.write(a[3], &pair(soft, hard)).is_err() {
                        return Outcome::Return(EFAULT);
                    }
                }
                if a[2] != 0 {
                    let (Ok(soft), Ok(hard)) = (guest.load::<8>(a[2]), guest.load::<8>(a[2] + 8))
                    else {
                        return Outcome::Return(EFAULT);
                    };
                    return Outcome::Return(self.set_limit(a[1], soft, hard));
                }
                0
            }
            283 => ENOSYS, // membarrier: one CPU, and runtimes fall back
            293 => ENOSYS, // rseq: glibc does without
            _ => return Outcome::NotMine,
        };
        Outcome::Return(r)
    }

    /// `mmap(addr, len, prot, flags, fd, offset)`: anonymous memory, or a
    /// private copy of a file's bytes; placed from MMAP_BASE up (a hint is
    /// not followed unless MAP_FIXED, which maps over what is there).
    fn mmap(&mut self, guest: &mut impl Guest, a: [u64; 6]) -> Outcome {
        const MAP_SHARED: u64 = 0x01;
        const MAP_FIXED: u64 = 0x10;
        const MAP_ANONYMOUS: u64 = 0x20;
        let len = align(a[1], PAGE);
        let (flags, prot) = (a[3], a[2] as u8 & (READ | WRITE | EXEC));
        if len == 0 || (flags & MAP_FIXED != 0 && !a[0].is_multiple_of(PAGE)) {
            return Outcome::Return(EINVAL);
        }
        let file = if flags & MAP_ANONYMOUS != 0 {
            None
        } else {
            match self.file(a[4]) {
                Some(File::Disk(d)) if !self.fs.stat(d.ino).is_ok_and(|s| s.dir) => Some(*d),
                Some(_) => return Outcome::Return(-19), // ENODEV
                None => return Outcome::Return(EBADF),
            }
        };
        if file.is_some() && flags & MAP_SHARED != 0 && prot & WRITE != 0 {
            return Outcome::Unsupported(Some("a shared writable mapping of a file"));
        }
        let at = if flags & MAP_FIXED != 0 {
            guest.unmap(a[0], len);
            a[0]
        } else {
            let at = self.mmap_next;
            self.mmap_next += len + PAGE;
            at
        };
        match file {
            None => guest.map(at, len, prot),
            Some(d) => {
                guest.map(at, len, READ | WRITE);
                let bytes = self.fs.read(d.ino, a[5], len as usize).unwrap_or_default();
                let copied = guest.write(at, bytes);
                debug_assert!(copied.is_ok(), "the pages were just mapped");
                guest.protect(at, len, prot);
            }
        }
        Outcome::Return(at as i64)
    }

    fn close(&mut self, fd: u64) -> i64 {
        match self.files.get_mut(fd as usize).and_then(Option::take) {
            Some(open) => {
                self.release(&open.file);
                0
            }
            None => EBADF,
        }
    }

    fn dup(&mut self, fd: u64, lowest: u64) -> i64 {
        let Some(file) = self.open(fd).cloned() else {
            return EBADF;
        };
        self.share(&file.file);
        let lowest = lowest as usize;
        let free = (lowest..self.files.len()).find(|&i| self.files[i].is_none());
        let at = free.unwrap_or(self.files.len().max(lowest));
        if at as u64 >= MAX_FILES {
            self.release(&file.file);
            return -24; // EMFILE
        }
        if self.files.len() <= at {
            self.files.resize(at + 1, None);
        }
        self.files[at] = Some(file);
        at as i64
    }

    fn fcntl(&mut self, fd: u64, command: u64, arg: u64) -> i64 {
        if self.file(fd).is_none() {
            return EBADF;
        }
        match command {
            0 | 1030 => self.dup(fd, arg), // F_DUPFD, F_DUPFD_CLOEXEC
            1 | 2 => 0,                    // F_GETFD, F_SETFD
            3 => {
                // F_GETFL: the access mode, and O_NONBLOCK
                let open = self.open(fd).expect("checked above");
                let mode = match open.file {
                    File::Stdin | File::PipeRead(_) => 0,
                    File::Stdout | File::Stderr | File::PipeWrite(_) => 1,
                    File::Event(_)
                    | File::Epoll(_)
                    | File::Null
                    | File::Random
                    | File::Socket(_) => 2,
                    File::Disk(d) => {
                        let mode = match (d.read, d.write) {
                            (true, false) => 0,
                            (false, true) => 1,
                            _ => 2,
                        };
                        mode | if d.append { 0o2000 } else { 0 }
                    }
                };
                mode | if open.nonblock { 0o4000 } else { 0 }
            }
            4 => {
                // F_SETFL: O_NONBLOCK is the one flag kept
                if let Some(Some(open)) = self.files.get_mut(fd as usize) {
                    open.nonblock = arg & 0o4000 != 0;
                }
                0
            }
            _ => EINVAL,
        }
    }

    /// `read(fd, at, len)`.
    fn read(
        &mut self,
        guest: &mut impl Guest,
        ctx: &Context,
        fd: u64,
        at: u64,
        len: u64,
    ) -> Outcome {
        let Some(open) = self.open(fd).cloned() else {
            return Outcome::Return(EBADF);
        };
        let got = match open.file {
            File::Disk(d) => {
                let (r, read) = self.disk_read(guest, d, at, len, d.offset);
                self.advance(fd, d.offset + read);
                return Outcome::Return(r);
            }
            File::Null => return Outcome::Return(0),
            File::Random => {
                return Outcome::Random {
                    at,
                    len: len.min(1 << 16),
                };
            }
            File::Socket(_) => return self.receive(guest, ctx, fd, &[(at, len)], 0, (0, 0)),
            _ => match self.read_stream(&open.file, len.min(1 << 20) as usize) {
                Ok(got) => got,
                Err(e) => return Outcome::Return(e),
            },
        };
        match got {
            Ok(bytes) => Outcome::Return(match guest.write(at, &bytes) {
                Ok(()) => bytes.len() as i64,
                Err(_) => EFAULT,
            }),
            Err(io::WouldWait) if open.nonblock => Outcome::Return(EAGAIN),
            Err(io::WouldWait) => self.wait(ctx, None),
        }
    }

    /// `readv` or `writev(fd, iovecs, count)`: each (base, len) in turn,
    /// until one is short or fails (a failure after some bytes is the
    /// count so far).
    fn vectored(
        &mut self,
        guest: &mut impl Guest,
        ctx: &Context,
        a: [u64; 6],
        write: bool,
    ) -> Outcome {
        let mut total = 0;
        for k in 0..a[2].min(1024) {
            let (Ok(base), Ok(len)) = (
                guest.load::<8>(a[1] + 16 * k),
                guest.load::<8>(a[1] + 16 * k + 8),
            ) else {
                return Outcome::Return(if total == 0 { EFAULT } else { total });
            };
            let done = if write {
                self.write(guest, ctx, a[0], base, len)
            } else {
                self.read(guest, ctx, a[0], base, len)
            };
            match done {
                Outcome::Return(n) if n < 0 => {
                    return Outcome::Return(if total == 0 { n } else { total });
                }
                Outcome::Return(n) => {
                    total += n;
                    if (n as u64) < len {
                        break;
                    }
                }
                other if total == 0 => return other,
                _ => break,
            }
        }
        Outcome::Return(total)
    }

    /// A descriptor's disk offset moves to `to`.
    fn advance(&mut self, fd: u64, to: u64) {
        if let Some(Some(Open {
            file: File::Disk(d),
            ..
        })) = self.files.get_mut(fd as usize)
        {
            d.offset = to;
        }
    }

    /// Bytes of a stream (a pipe, an eventfd, standard input), or that
    /// it would wait; `Err` for a descriptor that cannot be read so.
    fn read_stream(
        &mut self,
        file: &File,
        len: usize,
    ) -> Result<Result<Vec<u8>, io::WouldWait>, i64> {
        Ok(match *file {
            File::Stdin => Ok(Vec::new()),
            File::PipeRead(n) => self.io.read_pipe(n, len),
            File::Event(n) => {
                if len < 8 {
                    return Err(EINVAL);
                }
                self.io.read_event(n)
            }
            _ => return Err(EBADF),
        })
    }

    /// `write(fd, at, len)`.
    fn write(&mut self, guest: &impl Guest, ctx: &Context, fd: u64, at: u64, len: u64) -> Outcome {
        let Some(open) = self.open(fd).cloned() else {
            return Outcome::Return(EBADF);
        };
        match open.file {
            File::Disk(d) => {
                let (r, end) = self.disk_write(guest, d, at, len, d.offset, ctx.now);
                self.advance(fd, end);
                return Outcome::Return(r);
            }
            File::Null | File::Random => return Outcome::Return(len.min(1 << 20) as i64),
            _ => {}
        }
        let mut bytes = vec![0; len.min(1 << 20) as usize];
        if guest.read(at, &mut bytes).is_err() {
            return Outcome::Return(EFAULT);
        }
        if let File::Socket(_) = open.file {
            return self.send(ctx, fd, &bytes, None, 0);
        }
        let wrote = match open.file {
            File::Stdout => {
                self.stdout.extend_from_slice(&bytes);
                Ok(bytes.len())
            }
            File::Stderr => {
                self.stderr.extend_from_slice(&bytes);
                Ok(bytes.len())
            }
            File::PipeWrite(n) => match self.io.write_pipe(n, &bytes) {
                Err(io::Full::Closed) => {
                    // EPIPE, and SIGPIPE to the writer.
                    return match self.signals.send(ctx.tid, 13) {
                        Outcome::Return(_) => Outcome::Return(-32),
                        other => other,
                    };
                }
                other => other.map_err(|_| io::WouldWait),
            },
            File::Event(n) => {
                if bytes.len() < 8 {
                    return Outcome::Return(EINVAL);
                }
                let value = u64::from_le_bytes(bytes[..8].try_into().expect("eight bytes"));
                if value == u64::MAX {
                    return Outcome::Return(EINVAL);
                }
                self.io.write_event(n, value).map(|()| 8)
            }
            _ => return Outcome::Return(EBADF),
        };
        match wrote {
            Ok(n) => Outcome::Return(n as i64),
            Err(io::WouldWait) if open.nonblock => Outcome::Return(EAGAIN),
            Err(io::WouldWait) => self.wait(ctx, None),
        }
    }

    /// How many arrivals `file` has had (for edge-triggered interests).
    fn generation(&self, file: &File) -> u64 {
        match *file {
            File::Socket(id) => self.net.get(id).generation,
            _ => self.io.generation(file),
        }
    }

    /// What `fd` is ready for, in poll's bits (the same as epoll's):
    /// POLLIN 1, POLLOUT 4, POLLERR 8, POLLHUP 0x10; POLLNVAL 0x20 for a
    /// closed descriptor.
    fn ready(&self, fd: u64) -> u32 {
        match self.file(fd) {
            None => 0x20,
            Some(File::Stdin) => 0x1,
            Some(File::Stdout | File::Stderr) => 0x4,
            Some(File::Disk(_) | File::Null | File::Random) => 0x1 | 0x4,
            Some(File::Socket(id)) => self.net.ready(*id),
            Some(File::Epoll(n)) => {
                let n = *n;
                let any = self
                    .io
                    .interests(n)
                    .any(|(fd, events)| self.ready(fd) & events != 0);
                if any { 0x1 } else { 0 }
            }
            Some(file) => self.io.ready(file),
        }
    }

    /// `ppoll(fds, n, timeout, mask)`: each descriptor's readiness; with
    /// none ready it waits (see [`Kernel::wait`]).
    fn ppoll(&mut self, guest: &mut impl Guest, ctx: &Context, a: [u64; 6]) -> Outcome {
        let (fds, n) = (a[0], a[1]);
        if n > MAX_FILES {
            return Outcome::Return(EINVAL);
        }
        let mut ready = 0;
        for k in 0..n {
            let at = fds + 8 * k;
            let (Ok(fd), Ok(events)) = (guest.load::<4>(at), guest.load::<2>(at + 4)) else {
                return Outcome::Return(EFAULT);
            };
            let fd = fd as u32 as i32;
            // Errors and hang-ups are reported whether asked or not.
            let revents = if fd < 0 {
                0
            } else {
                self.ready(fd as u64) & (events as u32 | 0x8 | 0x10 | 0x20)
            } as u16;
            if guest.write(at + 6, &revents.to_le_bytes()).is_err() {
                return Outcome::Return(EFAULT);
            }
            ready += i64::from(revents != 0);
        }
        if ready > 0 {
            return Outcome::Return(ready);
        }
        let timeout = if a[2] == 0 {
            None
        } else {
            let (Ok(s), Ok(ns)) = (guest.load::<8>(a[2]), guest.load::<8>(a[2] + 8)) else {
                return Outcome::Return(EFAULT);
            };
            Some(s.saturating_mul(1_000_000_000).saturating_add(ns))
        };
        if timeout == Some(0) {
            return Outcome::Return(0);
        }
        self.wait(ctx, timeout)
    }

    /// The epoll instance `fd` is (EINVAL for another file).
    fn epoll_of(&self, fd: u64) -> Result<usize, i64> {
        match self.file(fd) {
            Some(File::Epoll(n)) => Ok(*n),
            Some(_) => Err(EINVAL),
            None => Err(EBADF),
        }
    }

    /// `epoll_ctl(epfd, op, fd, event)`: EPOLL_CTL_ADD 1, DEL 2, MOD 3.
    fn epoll_ctl(&mut self, guest: &mut impl Guest, a: [u64; 6]) -> Outcome {
        let n = match self.epoll_of(a[0]) {
            Ok(n) => n,
            Err(e) => return Outcome::Return(e),
        };
        if self.file(a[2]).is_none() {
            return Outcome::Return(EBADF);
        }
        if a[2] == a[0] {
            return Outcome::Return(EINVAL);
        }
        let event = if a[1] == 2 {
            None
        } else {
            // struct epoll_event: events (u32), then data (u64) at 8
            let (Ok(events), Ok(data)) = (guest.load::<4>(a[3]), guest.load::<8>(a[3] + 8)) else {
                return Outcome::Return(EFAULT);
            };
            Some((events as u32, data))
        };
        Outcome::Return(self.io.control(n, a[1], a[2], event))
    }

    /// `epoll_pwait(epfd, events, max, timeout_ms, mask)`: the ready
    /// interests in descriptor order (edge-triggered ones only when they
    /// became ready, or got data, since they were last reported); with
    /// none it waits.
    fn epoll_pwait(&mut self, guest: &mut impl Guest, ctx: &Context, a: [u64; 6]) -> Outcome {
        let n = match self.epoll_of(a[0]) {
            Ok(n) => n,
            Err(e) => return Outcome::Return(e),
        };
        let max = a[2] as i32;
        if max <= 0 {
            return Outcome::Return(EINVAL);
        }
        let readiness: Vec<(u64, u32, u64)> = self
            .io
            .interests(n)
            .map(|(fd, _)| {
                (
                    fd,
                    self.ready(fd),
                    self.file(fd).map_or(0, |f| self.generation(f)),
                )
            })
            .collect();
        let events = self.io.collect(n, &readiness, max as usize);
        for (k, (mask, data)) in events.iter().enumerate() {
            let mut event = [0u8; 16];
            event[..4].copy_from_slice(&mask.to_le_bytes());
            event[8..].copy_from_slice(&data.to_le_bytes());
            if guest.write(a[1] + 16 * k as u64, &event).is_err() {
                return Outcome::Return(EFAULT);
            }
        }
        if !events.is_empty() {
            return Outcome::Return(events.len() as i64);
        }
        let timeout = a[3] as i32;
        match timeout {
            0 => Outcome::Return(0),
            t if t < 0 => self.wait(ctx, None),
            t => self.wait(ctx, Some(t as u64 * 1_000_000)),
        }
    }
}

impl Kernel {
    /// The (soft, hard) limits of `resource`.
    fn limit(&self, resource: u64) -> (u64, u64) {
        self.limits
            .get(&resource)
            .copied()
            .unwrap_or_else(|| limits(resource))
    }

    /// `setrlimit`: a soft limit above the hard one, or a raised hard
    /// one, is EINVAL or EPERM as for an unprivileged process.
    fn set_limit(&mut self, resource: u64, soft: u64, hard: u64) -> i64 {
        if resource >= 16 || soft > hard {
            return EINVAL;
        }
        if hard > self.limit(resource).1 {
            return -1; // EPERM
        }
        self.limits.insert(resource, (soft, hard));
        0
    }
}

/// The (soft, hard) limits of `resource` at start: 8 MiB of stack, 1024
/// files (4096 hard), the rest unlimited.
fn limits(resource: u64) -> (u64, u64) {
    match resource {
        3 => (STACK_SIZE, u64::MAX),     // RLIMIT_STACK
        7 => (MAX_FILES, MAX_FILES * 4), // RLIMIT_NOFILE
        _ => (u64::MAX, u64::MAX),       // RLIM_INFINITY
    }
}

fn pair(soft: u64, hard: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&soft.to_le_bytes());
    out[8..].copy_from_slice(&hard.to_le_bytes());
    out
}
