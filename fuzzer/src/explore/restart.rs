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

/// One zeroed page of memory shared with the processes forked after.
fn shared_page() -> std::io::Result<*mut libc::c_void> {
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
        return Err(std::io::Error::last_os_error());
    }
    Ok(page)
}

pub(super) static EXIT_CELL: OnceLock<ExitCell> = OnceLock::new();
const EXIT_UNSET: i32 = -1;

impl ExitCell {
    pub(super) fn new() -> ExitCell {
        let Ok(page) = shared_page() else {
            return ExitCell(std::ptr::null_mut());
        };
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

/// The cores some other process (not a kernel thread) is bound to alone
/// (AFL++'s rule for telling busy cores), and the cores this process may
/// run on (its affinity mask: `taskset`, a container's cpuset), in order.
fn taken_cores() -> (BTreeSet<usize>, Vec<usize>) {
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
            // Kernel threads (no memory of their own) are bound per core
            // on every machine; they do not make a core busy.
            if !status.contains("\nVmSize:") {
                continue;
            }
            let cpus = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(str::trim);
            if let Some(cpu) = cpus.and_then(|c| c.parse::<usize>().ok()) {
                taken.insert(cpu);
            }
        }
    }
    (taken, allowed_cores())
}

/// The cores this process may run on, as LibAFL's launcher sees them (it
/// starts clients only on these): the affinity mask, else every core
/// online.
fn allowed_cores() -> Vec<usize> {
    match libafl_bolts::core_affinity::get_core_ids() {
        Ok(ids) if !ids.is_empty() => ids.into_iter().map(|id| id.0).collect(),
        _ => {
            // SAFETY: sysconf only reads.
            let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
            (0..online).collect()
        }
    }
}

/// `n` cores for a node's clients, among those this process may run on:
/// those no other process is bound to first (so that two campaigns on one
/// machine do not share one), then the others, in order.
pub(super) fn cores_for(n: usize) -> Vec<usize> {
    let (taken, allowed) = taken_cores();
    let mut cores: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|c| !taken.contains(c))
        .collect();
    cores.extend(allowed.iter().copied().filter(|c| taken.contains(c)));
    cores.truncate(n);
    debug_assert!(cores.len() == n.min(allowed.len()));
    debug_assert!(cores.iter().all(|c| allowed.contains(c)));
    cores
}

/// Binds this client, and the programs it starts (they inherit it), to one
/// core, as AFL++ does: a core no other process is bound to alone, else the
/// one it runs on. A run's wake-ups then stay on one core, which on virtual
/// machines costs several times less than waking another. `DST_NO_AFFINITY=1`
/// leaves scheduling alone. (With --jobs, LibAFL's launcher binds each
/// client to its own core, chosen by [`cores_for`].)
pub(super) fn bind_to_free_core() {
    if std::env::var_os("DST_NO_AFFINITY").is_some_and(|v| !v.is_empty() && v != "0") {
        return;
    }
    let (taken, allowed) = taken_cores();
    // SAFETY: sched_getcpu only reads.
    let current = unsafe { libc::sched_getcpu() };
    let cpu = allowed
        .iter()
        .copied()
        .find(|c| !taken.contains(c))
        .unwrap_or(current.max(0) as usize);
    debug_assert!(cpu < libc::CPU_SETSIZE as usize);
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET stays within it for
    // cpu < CPU_SETSIZE (asserted); sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The pids of a node's restarters, in a page shared with them: each writes
/// its own when it starts; the broker ends when all of them have exited.
/// (LLMP's own exit rule counts clients, and never fires once a link to
/// another node is one.)
pub(super) struct Restarters {
    slots: *mut i32,
    count: usize,
    started: std::time::Instant,
}

// SAFETY: the page is shared memory read and written with volatile word
// accesses; each slot has one writer (its restarter), the broker reads.
unsafe impl Send for Restarters {}
// SAFETY: as above.
unsafe impl Sync for Restarters {}

impl Restarters {
    /// Slots for clients 1 to `count`.
    pub(super) fn new(count: usize) -> std::io::Result<Restarters> {
        assert!(count < 1024, "one page of slots");
        let page = shared_page()?;
        // A fresh anonymous page is zeroed: no slot is written yet.
        Ok(Restarters {
            slots: page.cast(),
            count,
            started: std::time::Instant::now(),
        })
    }

    /// In client `id`'s restarter: records its pid.
    pub(super) fn record(&self, id: usize) {
        debug_assert!((1..=self.count).contains(&id));
        if (1..=self.count).contains(&id) {
            // SAFETY: id is within the page (count < 1024); one writer.
            unsafe { self.slots.add(id).write_volatile(std::process::id() as i32) };
        }
    }

    /// In the broker (their parent): whether every restarter has exited
    /// (without reaping them: the launcher waits for them after). A slot
    /// still unwritten after a minute counts as exited: that restarter
    /// never started.
    pub(super) fn all_exited(&self) -> bool {
        (1..=self.count).all(|id| self.exited(id))
    }

    /// Whether some restarter has exited (with `--stop-on-finding`, its
    /// client stopped at a finding: the node stops).
    pub(super) fn any_exited(&self) -> bool {
        (1..=self.count).any(|id| {
            // SAFETY: as in `record`.
            let pid = unsafe { self.slots.add(id).read_volatile() };
            pid > 0 && self.exited(id)
        })
    }

    fn exited(&self, id: usize) -> bool {
        // SAFETY: as in `record`.
        let pid = unsafe { self.slots.add(id).read_volatile() };
        if pid <= 0 {
            return self.started.elapsed() > std::time::Duration::from_secs(60);
        }
        // SAFETY: a zeroed siginfo_t is valid; waitid with WNOWAIT
        // reports an exited child without reaping it.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let r = libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            // ECHILD: not (or no longer) our child.
            r != 0 || info.si_pid() != 0
        }
    }
}

/// Set by SIGINT or SIGTERM in the broker.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// In the broker: SIGINT and SIGTERM end its loop (LLMP installs its own
/// handler only in its loops, which dst's broker does not use).
pub(super) fn stop_on_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe).
        unsafe {
            libc::signal(signal, on_stop as *const () as libc::sighandler_t);
        }
    }
}

/// Whether the broker was asked to stop.
pub(super) fn stopping() -> bool {
    STOP.load(std::sync::atomic::Ordering::Relaxed)
}
