//! The process around a client: how it tells its restarter the status it
//! ended with, dies with its parent, and picks a core.

use std::collections::BTreeSet;
use std::sync::OnceLock;

/// A word of memory shared with forked children, through which a client
/// tells its restarter the exit status it ended with.
pub(super) struct ExitCell(*mut i32);

// SAFETY: the cell is a word of shared memory accessed with volatile reads
// and writes by one process at a time (the client writes, then exits; the
// restarter reads after that).
unsafe impl Send for ExitCell {}
// SAFETY: as above.
unsafe impl Sync for ExitCell {}

pub(super) static EXIT_CELL: OnceLock<ExitCell> = OnceLock::new();
const EXIT_UNSET: i32 = -1;

impl ExitCell {
    pub(super) fn new() -> ExitCell {
        // SAFETY: an anonymous shared mapping of one page, checked below.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if page == libc::MAP_FAILED {
            return ExitCell(std::ptr::null_mut());
        }
        let cell = page.cast::<i32>();
        // SAFETY: the page is mapped, aligned and writable.
        unsafe { cell.write_volatile(EXIT_UNSET) };
        ExitCell(cell)
    }

    pub(super) fn get(&self) -> Option<i32> {
        if self.0.is_null() {
            return None;
        }
        // SAFETY: the page stays mapped for the life of the process.
        let code = unsafe { self.0.read_volatile() };
        (code != EXIT_UNSET).then_some(code)
    }
}

/// Records the exit status of this process for its restarter, if it has one.
pub fn report_exit(code: i32) {
    debug_assert!(code != EXIT_UNSET);
    if let Some(cell) = EXIT_CELL.get()
        && !cell.0.is_null()
    {
        // SAFETY: as in `ExitCell::get`.
        unsafe { cell.0.write_volatile(code) };
    }
}

/// A client dies with the process that started it (its restarter, or the
/// broker), so that killing the campaign leaves no orphan behind.
pub(super) fn die_with_parent() {
    // SAFETY: prctl(PR_SET_PDEATHSIG) only sets a signal for this process.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
}

/// Binds this client, and the programs it starts (they inherit it), to one
/// core, as AFL++ does: a core no other process is bound to alone, else the
/// one it runs on. A run's wake-ups then stay on one core, which on virtual
/// machines costs several times less than waking another. `DST_NO_AFFINITY=1`
/// leaves scheduling alone. (With --jobs, LibAFL's launcher binds each
/// client to its own core.)
pub(super) fn bind_to_free_core() {
    if std::env::var_os("DST_NO_AFFINITY").is_some_and(|v| !v.is_empty() && v != "0") {
        return;
    }
    let me = std::process::id().to_string();
    let mut taken = BTreeSet::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !name.bytes().all(|b| b.is_ascii_digit()) || name == me {
                continue;
            }
            let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
                continue;
            };
            let cpus = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(str::trim);
            if let Some(cpu) = cpus.and_then(|c| c.parse::<usize>().ok()) {
                taken.insert(cpu);
            }
        }
    }
    // SAFETY: sysconf and sched_getcpu only read.
    let (online, current) = unsafe {
        (
            libc::sysconf(libc::_SC_NPROCESSORS_ONLN).max(1) as usize,
            libc::sched_getcpu(),
        )
    };
    let cpu = (0..online)
        .find(|c| !taken.contains(c))
        .unwrap_or(current.max(0) as usize);
    debug_assert!(cpu < libc::CPU_SETSIZE as usize);
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET stays within it for
    // cpu < online <= CPU_SETSIZE; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
