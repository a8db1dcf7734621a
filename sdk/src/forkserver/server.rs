//! The fork server's loop (the `forkserver` feature): the protocol and
//! how it is used are the parent module's doc.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::{CMD_RUN, DEFER_ENV, FORKSERVER_ENV, HELLO, LEARN_ENV, PERSISTENT_RUNS};
use crate::region::DONE_EXITED;

#[cfg(target_arch = "x86_64")]
#[path = "pages.rs"]
mod pages;
/// Elsewhere nothing is learned: children inherit what the server mapped.
#[cfg(not(target_arch = "x86_64"))]
mod pages {
    pub(super) const LEARNING_TIME: std::time::Duration = std::time::Duration::ZERO;
    pub(super) const LEARNING_RUNS: u8 = 0;
    pub(super) const SERVER_RUN: u8 = 1;
    pub(super) const FORK_RUN: u8 = 2;
    pub(super) fn learning_input(_: u64) -> Vec<u8> {
        Vec::new()
    }
    pub(super) fn note_fault(_: &str, _: &str, _: u32) {}
    pub(super) enum Learning {}
    impl Learning {
        pub(super) fn faults(&self) -> Vec<(String, String, u32)> {
            match *self {}
        }
        pub(super) fn start() -> Option<Learning> {
            None
        }
        pub(super) fn trace(&self, _: u8) -> Option<libc::sigaction> {
            match *self {}
        }
        pub(super) fn untrace(&self, _: &libc::sigaction) {}
        pub(super) fn no_core_dump(&self) {}
        pub(super) fn privatize(&self) {}
        pub(super) fn wait(&self, _: libc::pid_t, _: std::time::Instant) {}
        pub(super) fn finish(self, _: &[usize]) {}
    }
}

const FORKSERVER_ENV_C: &std::ffi::CStr = c"DST_FORKSERVER";

/// The server's pid once it serves, else 0. Kept, not a flag set in each
/// child: a write there would cost every child a copy of its page.
static SERVER: AtomicU32 = AtomicU32::new(0);
/// Set in a learning run (`pages`), which runs as a plain process would.
static LEARNING: AtomicBool = AtomicBool::new(false);
static STARTED: AtomicBool = AtomicBool::new(false);

/// Registers a fault name in this process: set by libdst (`dst_fault`),
/// called by the server for the names its learning runs used.
static FAULT_REGISTRAR: std::sync::OnceLock<fn(&[LearnedFault])> = std::sync::OnceLock::new();

/// A fault a learning run registered: its name, file and line.
pub type LearnedFault = (String, String, u32);

/// Names the function that registers a fault by name, file and line, so
/// that the server registers the faults its learning runs used before it
/// forks runs, and runs find them registered (C: libdst's `dst_fault`,
/// whose names are known only when called). Set before the server starts.
#[doc(hidden)]
pub fn set_fault_registrar(register: fn(&[LearnedFault])) {
    let _ = FAULT_REGISTRAR.set(register);
}

/// Called on a fault name's first use in a process, before it registers
/// it: in a learning run, notes the name for the server.
#[doc(hidden)]
pub fn learned_fault(name: &str, file: &str, line: u32) {
    if LEARNING.load(Ordering::Relaxed) {
        pages::note_fault(name, file, line);
    }
}

/// Whether this process is a run forked by a fork server.
pub fn in_child() -> bool {
    let server = SERVER.load(Ordering::Relaxed);
    server != 0 && !LEARNING.load(Ordering::Relaxed) && std::process::id() != server
}

/// `DST_DEFER`, read once (before the server forks, so runs do not read it).
fn deferred() -> bool {
    static DEFERRED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DEFERRED.get_or_init(|| std::env::var_os(DEFER_ENV).is_some_and(|v| !v.is_empty() && v != "0"))
}

/// Starts the server unless `DST_DEFER` asks for `setup_complete`;
/// returns in each child.
pub(super) fn start() {
    if !deferred() {
        serve();
    }
}

/// Starts the server when `DST_DEFER` is set. Returns in each child.
pub(crate) fn on_setup_complete() {
    if !STARTED.load(Ordering::Relaxed) && deferred() {
        serve();
    }
}

fn descriptors() -> Option<(i32, i32)> {
    let text = std::env::var(FORKSERVER_ENV).ok()?;
    let (ctl, status) = text.split_once(',')?;
    Some((ctl.trim().parse().ok()?, status.trim().parse().ok()?))
}

/// The server loop; returns only in a forked child, or at once when this
/// process is not asked to serve.
fn serve() {
    let Some((ctl_fd, status_fd)) = descriptors() else {
        return;
    };
    if STARTED.swap(true, Ordering::SeqCst) {
        return;
    }
    // Map and validate the region now, so every child inherits it.
    if !crate::runtime::attach_shared() {
        return;
    }
    let extent = crate::runtime::coverage_extent().min(u64::from(u32::MAX)) as u32;
    let mut hello = [0u8; 8];
    hello[..4].copy_from_slice(&HELLO.to_le_bytes());
    hello[4..].copy_from_slice(&extent.to_le_bytes());
    // Runs do not inherit the request: a program they start is no server.
    // SAFETY: this is the only thread (before main, or at setup_complete,
    // which documents it); libc's unsetenv neither allocates nor takes
    // Rust's environment lock.
    unsafe { libc::unsetenv(FORKSERVER_ENV_C.as_ptr()) };
    let header = crate::runtime::shared_header().expect("attached above");
    share_code_with_children();
    SERVER.store(std::process::id(), Ordering::Relaxed);
    if learn(ctl_fd, status_fd) {
        // A learning run: on into the program.
        return;
    }
    if !write_all(status_fd, &hello) {
        return;
    }
    loop {
        if read_word(ctl_fd, 4) != Some(CMD_RUN) {
            // The executor is gone (or confused): end quietly.
            // SAFETY: ending this process without running atexit handlers
            // or destructors, which belong to the children.
            unsafe { libc::_exit(0) };
        }
        let pid = fork_child(ctl_fd, status_fd);
        if pid == 0 {
            return;
        }
        if pid < 0 {
            // SAFETY: as above.
            unsafe { libc::_exit(1) };
        }
        header.pid.store(pid as u32, Ordering::Release);
        // Until the child ends (a persistent one runs many inputs first).
        let wait_status = reap(pid, 0).unwrap_or(0);
        // The status, then `done` for the run the child ended in: once the
        // executor sees it, nothing here touches the region again (it may
        // post the next run at once).
        header
            .wait_status
            .store(wait_status as u32, Ordering::Relaxed);
        let run = header.go.load(Ordering::Acquire);
        header.done.store(DONE_EXITED | run, Ordering::Release);
        crate::futex::wake(&header.done);
    }
}

/// Learns which code pages runs execute, if it can (see [`pages`]):
/// returns true in a learning run, which goes on into the program, false
/// in the server once it is done.
fn learn(ctl_fd: i32, status_fd: i32) -> bool {
    let Some(learning) = pages::Learning::start() else {
        hand_on_region();
        return false;
    };
    // The server records the calls its loop makes, but not fork: the C
    // library may run code with SIGSEGV blocked there, and a fault then
    // would end the server. Its descriptors are read and written with
    // nothing.
    if !signal_blocked(libc::SIGSEGV)
        && let Some(previous) = learning.trace(pages::SERVER_RUN)
    {
        read_word(ctl_fd, 0);
        write_all(status_fd, &[]);
        crate::futex::wake(&LEARNING_WORD);
        reap(-1, libc::WNOHANG);
        learning.untrace(&previous);
    }
    // The learning runs, then one more learning process that forks as the
    // server does, both sides of the fork traced (with a C library that
    // blocks signals in fork, it just dies).
    let deadline = std::time::Instant::now() + pages::LEARNING_TIME;
    for run in (1..=pages::LEARNING_RUNS).chain([pages::FORK_RUN]) {
        if std::time::Instant::now() >= deadline {
            break;
        }
        let pid = fork_child(ctl_fd, status_fd);
        if pid < 0 {
            break;
        }
        if pid > 0 {
            learning.wait(pid, deadline);
            continue;
        }
        LEARNING.store(true, Ordering::Relaxed);
        learning.no_core_dump();
        if learning.trace(run).is_none() {
            // SAFETY: ending a learning process, which nobody sees.
            unsafe { libc::_exit(125) };
        }
        if run == pages::FORK_RUN {
            let pid = fork_child(-1, -1);
            if pid > 0 {
                reap(pid, 0);
            }
            // SAFETY: ending a learning process (and its child), which
            // nobody sees, without the program's exit handlers.
            unsafe { libc::_exit(0) };
        }
        learning.privatize();
        if run > 1 {
            crate::runtime::replace_input(&pages::learning_input(u64::from(run)));
        }
        return true;
    }
    if let Some(register) = FAULT_REGISTRAR.get() {
        register(&learning.faults());
    }
    // Before the code is cut down: what it runs would come back with its
    // neighbours, in every child. After the learning runs, which copy the
    // whole segment, spare page too.
    hand_on_region();
    learning.finish(&[serve as *const () as usize, learn as *const () as usize]);
    false
}

/// Whether `signal` is blocked in this thread.
fn signal_blocked(signal: i32) -> bool {
    // SAFETY: a query of this thread's mask into a local set.
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask) != 0
            || libc::sigismember(&mask, signal) != 0
    }
}

/// A futex word nobody waits on, woken while learning (see [`pages`]).
static LEARNING_WORD: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Forks a run: returns 0 in the child, which leads its own process group,
/// dies with the server and has closed the server's pipes; the child's pid
/// in the server (negative if fork failed).
fn fork_child(ctl_fd: i32, status_fd: i32) -> libc::pid_t {
    // SAFETY: fork in a single-threaded process (before main, or at
    // setup_complete, which documents it); the child only changes its
    // process group and closes descriptors before returning to the
    // program.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: calls about this process alone; the descriptors are the
        // server's, which the child must not keep.
        unsafe {
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            libc::close(ctl_fd);
            libc::close(status_fd);
        }
    }
    // (The server does not also set the child's group: until the child has,
    // the child has started nothing that a kill of its group must reach,
    // and the executor kills the child itself too when a run times out.)
    pid
}

/// Waits for child `pid` (`flags` 0 or `WNOHANG`): its wait status once it
/// ended, `None` if it has not or cannot be waited for.
fn reap(pid: libc::pid_t, flags: i32) -> Option<i32> {
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child into a local.
        match unsafe { libc::waitpid(pid, &mut status, flags) } {
            p if p == pid => return Some(status),
            p if p < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return None,
        }
    }
}

/// Reads a little-endian word from the pipe `fd` (`len` 4), or reads
/// nothing (`len` 0, to record the call's pages while learning).
fn read_word(fd: i32, len: usize) -> Option<u32> {
    debug_assert!(len == 0 || len == 4);
    let mut word = [0u8; 4];
    let mut got = 0;
    loop {
        // SAFETY: reading into the rest of a local buffer.
        let n = unsafe { libc::read(fd, word[got..].as_mut_ptr().cast(), len - got) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return (len == 0).then_some(0);
        }
        got += n as usize;
        if got == len {
            return Some(u32::from_le_bytes(word));
        }
    }
}

/// Writes all of `bytes` to the pipe `fd` (at least one call, also for
/// none); false if it cannot.
fn write_all(fd: i32, mut bytes: &[u8]) -> bool {
    loop {
        // SAFETY: writing from a live slice.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n < 0 {
            return false;
        }
        bytes = &bytes[n as usize..];
        if bytes.is_empty() {
            return true;
        }
    }
}

/// Makes every child start with the code this server has run mapped: fork
/// copies the page tables of a mapping only where the mapping has private
/// (anonymous) pages, so each child would otherwise take a page fault for
/// every code page it runs, in every run (24 of 54 faults per run of
/// examples/c-kv, most of them in code the server's own start already
/// ran). So each executable file mapping gets one private page (one byte
/// written over with itself, the way a debugger sets a breakpoint), after
/// which forks hand its page tables on. (Reading the whole text in first,
/// `MADV_POPULATE_READ`, saved two more faults and cost as much in page
/// tables to copy.) Best effort: a mapping the kernel will not let us do
/// this to is left as it is. What is handed on is then cut down to the
/// pages runs execute (`pages`).
fn share_code_with_children() {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    for (start, end, perms, path) in map_entries(&maps) {
        if handed_on(perms, path) != Some(Handed::Code) {
            continue;
        }
        let rx = (libc::PROT_READ | libc::PROT_EXEC) as usize;
        give_private_page(start, end, rx, |at, len, prot| {
            // SAFETY: changing the protection of one of this process's own
            // mappings, whole (see `give_private_page`).
            unsafe { libc::mprotect(at as *mut libc::c_void, len, prot as i32) == 0 }
        });
    }
}

/// Gives the private file mapping `[start, end)` (protection `prot`) one
/// private page, so that forks copy its page tables: its first byte
/// written back with the value it holds, while the whole mapping (so that
/// it stays one) is briefly writable too; then its protection goes back.
/// `mprotect` (address, length, protection) says whether it succeeded.
/// The process has one thread (the server runs before main or at
/// setup_complete), so nothing reads the mapping changed. Best effort: a
/// mapping the kernel will not make writable is left as it is. Inlined:
/// the fork server's learning calls it once pages of its code start to go.
#[inline(always)]
fn give_private_page(
    start: usize,
    end: usize,
    prot: usize,
    mprotect: impl Fn(usize, usize, usize) -> bool,
) {
    let writable = prot | libc::PROT_READ as usize | libc::PROT_WRITE as usize;
    if mprotect(start, end - start, writable) {
        // SAFETY: the first byte of a mapping of our own, now writable,
        // written back with the value it holds.
        unsafe {
            let byte = start as *mut u8;
            byte.write_volatile(byte.read_volatile());
        }
        mprotect(start, end - start, prot);
    }
}

/// `MADV_GUARD_INSTALL` (Linux 6.13), which the libc crate does not name.
const MADV_GUARD_INSTALL: i32 = 102;
/// At most this many pages of a section are handed on.
const HANDED_SECTION_PAGES: usize = 16;

/// Makes every child start with the region's pages runs use mapped: the
/// header and the input's first page, the coverage map's used part, the
/// catalog's sites and the first decision records. Fork copies a shared
/// mapping's page tables only where the mapping has an anonymous-memory
/// record (`anon_vma`), which a guard page gives it on Linux 6.15 and
/// later (a guard in a file mapping must survive fork). So the server puts
/// one on the segment's spare page ([`crate::region::segment_size`]), maps
/// the pages to hand on, and unmaps their neighbours: each child of
/// examples/c-kv then takes five page faults fewer. Best effort: on an
/// older kernel the guard is refused and nothing changes.
fn hand_on_region() {
    let Some(region) = crate::runtime::shared_region() else {
        return;
    };
    let Some(spare) = region.spare_page() else {
        return;
    };
    let page = crate::shm::page_size();
    // SAFETY: a guard on the spare page of our own mapping of the segment,
    // which nothing reads or writes.
    if unsafe { libc::madvise(spare.cast(), page, MADV_GUARD_INSTALL) } != 0 {
        return;
    }
    let view = region.view();
    let s = view.sections();
    // An extent of 0: not known, the whole map.
    let coverage = match crate::runtime::coverage_extent() {
        0 => usize::MAX,
        bytes => usize::try_from(bytes).unwrap_or(usize::MAX),
    };
    let sites = crate::catalog::count().min(s.sites_capacity);
    let hot = [
        (0, s.input_offset + s.input_capacity.min(1)),
        (s.coverage_offset, s.coverage_size.min(coverage)),
        (
            s.sites_offset,
            sites * size_of::<crate::region::SiteState>(),
        ),
        (
            s.decisions_offset,
            s.decisions_capacity.min(1) * size_of::<crate::region::DecisionRecord>(),
        ),
    ];
    let mut keep = vec![false; s.total_size.div_ceil(page)];
    for (offset, len) in hot {
        let first = offset / page;
        let end = (offset + len)
            .div_ceil(page)
            .min(first + HANDED_SECTION_PAGES);
        keep[first..end].fill(true);
    }
    // (Dropping this process's page tables alone: the segment keeps its
    // memory.)
    keep_mapped(view.base() as usize, page, &keep, |at, len| {
        // SAFETY: whole pages of our own shared mapping, before the spare
        // page; their contents stay in the segment.
        unsafe { libc::madvise(at as *mut libc::c_void, len, libc::MADV_DONTNEED) };
    });
}

/// Maps the pages from `start` that `keep` marks (reads a byte of each)
/// and has `drop` (address, length) unmap the others: reading a page maps
/// up to 16 neighbours with it (the kernel's fault-around), so the ones not
/// kept go after. Inlined: the fork server's learning calls it once pages
/// of its code start to go.
#[inline(always)]
fn keep_mapped(start: usize, page: usize, keep: &[bool], mut drop: impl FnMut(usize, usize)) {
    for (i, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
        // SAFETY: the caller's mapping, read.
        unsafe { std::ptr::read_volatile((start + i * page) as *const u8) };
    }
    let mut i = 0;
    while i < keep.len() {
        let gap = i;
        while i < keep.len() && !keep[i] {
            i += 1;
        }
        if i > gap {
            drop(start + gap * page, (i - gap) * page);
        }
        i += 1;
    }
}

/// The mappings listed in `/proc/self/maps` text: start, end, permissions
/// and path (empty for anonymous memory).
fn map_entries(maps: &str) -> impl Iterator<Item = (usize, usize, &str, &str)> {
    maps.lines().filter_map(|line| {
        let mut fields = line.split_whitespace();
        let (range, perms) = (fields.next()?, fields.next()?);
        // The path comes after offset, device and inode.
        let path = fields.nth(3).unwrap_or("");
        let (start, end) = range.split_once('-')?;
        let start = usize::from_str_radix(start, 16).ok()?;
        let end = usize::from_str_radix(end, 16).ok()?;
        Some((start, end, perms, path))
    })
}

/// What a private file mapping is to a fork server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handed {
    /// Executable: its page tables are handed on to children
    /// ([`share_code_with_children`]), cut down to what runs execute.
    Code,
    /// Read-only data (constants, and relocated data made read-only): its
    /// page tables are handed on once learning found which pages runs read
    /// (`pages`). Without learning, handing on every one the server has
    /// mapped cost more than the children's faults it saved.
    ReadOnly,
}

/// Whether a mapping (`perms` and path as `/proc/self/maps` lists them)
/// is one whose page tables a fork server may hand on, and as what:
/// private and file-backed (not [vdso] or [vsyscall]).
fn handed_on(perms: &str, path: &str) -> Option<Handed> {
    match perms {
        _ if !path.starts_with('/') => None,
        "r-xp" => Some(Handed::Code),
        "r--p" => Some(Handed::ReadOnly),
        _ => None,
    }
}

/// Runs of one persistent child: `$DST_PERSISTENT_RUNS` (1 is a fork per
/// input, for a harness that keeps state between runs), else
/// [`PERSISTENT_RUNS`].
fn persistent_runs() -> u32 {
    std::env::var(super::PERSISTENT_RUNS_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(PERSISTENT_RUNS)
}

/// Persistent mode: runs `body` once per input in this process. Under a
/// fork server, the child loops over up to [`PERSISTENT_RUNS`] inputs,
/// stopping itself between them; anywhere else (local mode, one process
/// per run) `body` runs once.
pub fn run(mut body: impl FnMut()) {
    if !in_child() {
        body();
        return;
    }
    let Some(header) = crate::runtime::shared_header() else {
        body();
        return;
    };
    let runs = persistent_runs();
    for i in 0..runs {
        body();
        if i + 1 < runs {
            // Done with run `go`; the executor resets the region, then
            // posts the next number.
            let run = header.go.load(Ordering::Acquire);
            header.done.store(run, Ordering::Release);
            crate::futex::wake(&header.done);
            while header.go.load(Ordering::Acquire) == run {
                crate::futex::wait(&header.go, run, None);
            }
        }
    }
}
