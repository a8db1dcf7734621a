//! Which code pages a fork server's runs execute, learned once before the
//! first run, so that every forked child starts with exactly those pages
//! mapped: no more (each costs a page-table entry to copy at fork and to
//! tear down at exit) and no fewer (each missing one costs the child a
//! page fault).
//!
//! Why: fork copies a private mapping's page tables only if the mapping
//! has private pages, so the server gives each code mapping one
//! (`share_code_with_children`). Fork then copies every page the server has
//! mapped: its whole start (the dynamic loader, libdst's setup, and the
//! kernel's fault-around, which maps up to 16 neighbours of every page
//! faulted), about 440 pages for examples/c-kv, of which a run executes
//! about 70. The rest was a fifth of each run's cost.
//!
//! How: before it greets the executor, the server closes every code page
//! (`PROT_NONE`) and installs [`on_fault`] for `SIGSEGV`, which records the
//! page of each fault in a shared table and opens that page alone. It then
//! makes the calls its loop makes (a read and a write of nothing on its
//! pipes, a futex wake), and forks [`LEARNING_RUNS`] *learning runs*, one
//! after the other. Each privatizes its copies of the shared mappings (the
//! region: the executor sees nothing of it) and runs the program, the
//! first with the empty input, the others with pseudo-random ones,
//! recording the pages it executes; after [`LEARNING_TIME`] the server
//! kills the one going and starts no other. Still traced, the server maps every recorded page
//! and drops all others (`MADV_DONTNEED`), then opens its code again and
//! puts back the old `SIGSEGV` action. While traced, every opened page is a
//! mapping of its own, so fault-around brings no neighbours in.
//!
//! Learning runs are real executions of the program: their effects on
//! files and other processes happen (a few runs more than the explorer
//! asked for). `DST_FORKSERVER_LEARN=0` turns learning off; the server then hands
//! on what it has mapped. x86-64 only (the handler is assembly); elsewhere
//! nothing is learned.
//!
//! Written here, not taken from a library: this needs a signal handler that
//! runs while any other page of the program may be closed, so it may call
//! nothing, not even the C library (a call into a closed page would fault
//! again forever); and the kernel tells an unprivileged process nothing
//! else about which of its pages it executed (pagemap has no accessed bit;
//! idle page tracking needs root).

use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::{Duration, Instant};

use super::LEARN_ENV;

/// Learning runs: the empty input's, then runs of pseudo-random inputs
/// ([`learning_input`]), so that paths the nominal run skips (faults
/// injected, errors handled) are learned too.
pub(super) const LEARNING_RUNS: u64 = 4;
/// All learning runs together stop after this long: the run then going is
/// killed (what it executed by then is learned) and no other starts.
pub(super) const LEARNING_TIME: Duration = Duration::from_secs(1);
/// Bytes of each pseudo-random learning input.
const LEARNING_INPUT: usize = 256;

/// The input of learning run `run` (from 1): bytes of splitmix64 seeded
/// with the run's number. Every byte is a decision, so a run of it takes
/// the paths the explorer's mutated inputs take, not only the nominal one.
pub(super) fn learning_input(run: u64) -> Vec<u8> {
    let mut state = run;
    let mut input = Vec::with_capacity(LEARNING_INPUT);
    while input.len() < LEARNING_INPUT {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        input.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    input
}

const PAGE: usize = 4096;
const MAX_RANGES: usize = 64;
const MAX_SHARED: usize = 16;
/// Bytes of `on_fault` kept open, from its first instruction.
const HANDLER_BYTES: usize = 256;

/// One executable file mapping: `[start, end)`; its pages' bytes in the
/// table start at `first`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Range {
    start: usize,
    end: usize,
    first: usize,
}

/// The shared table (a `MAP_SHARED` anonymous mapping, so that the
/// learning run's records reach the server), followed by one byte per
/// page of the ranges: 1 once that page ran.
#[repr(C)]
struct Table {
    ranges: usize,
    range: [Range; MAX_RANGES],
    shared: usize,
    /// Shared writable mappings, `[start, end)`: privatized in the
    /// learning run.
    shared_at: [Span; MAX_SHARED],
    /// Bytes used in `faults`.
    faults_len: usize,
    /// The fault names learning runs registered ([`note_fault`]), each as
    /// line, name length and file length (`u32`s), then name and file.
    faults: [u8; FAULT_BYTES],
}

const PAGES_AT: usize = size_of::<Table>();
const FAULT_BYTES: usize = 16 << 10;

/// The table while learning; null otherwise. Read by [`on_fault`].
static TABLE: AtomicPtr<Table> = AtomicPtr::new(std::ptr::null_mut());

/// The `SIGSEGV` handler while learning (`rdi` signal, `rsi` siginfo).
/// If the fault's page is in a code range, marks it and opens it
/// (`mprotect` read and execute) and returns: the instruction runs again.
/// Otherwise it puts back the default action and returns, so the access
/// faults again and ends the process as it would have without us.
#[unsafe(naked)]
extern "C" fn on_fault(_signal: i32, _info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    core::arch::naked_asm!(
        "mov rax, qword ptr [rip + {table}]",
        "test rax, rax",
        "jz 5f",
        // The faulting address (si_addr, 16 bytes into siginfo), its page.
        "mov r8, qword ptr [rsi + 16]",
        "and r8, -4096",
        "mov rcx, qword ptr [rax + {ranges}]",
        "lea r9, [rax + {range}]",
        "2:",
        "test rcx, rcx",
        "jz 5f",
        "cmp r8, qword ptr [r9]",
        "jb 3f",
        "cmp r8, qword ptr [r9 + 8]",
        "jae 3f",
        // In this range: mark the page's byte, then open the page.
        "mov r10, r8",
        "sub r10, qword ptr [r9]",
        "shr r10, 12",
        "add r10, qword ptr [r9 + 16]",
        "mov byte ptr [rax + r10 + {pages}], 1",
        "mov rdi, r8",
        "mov esi, 4096",
        "mov edx, {rx}",
        "mov eax, {mprotect}",
        "syscall",
        "ret",
        "3:",
        "add r9, {range_size}",
        "dec rcx",
        "jmp 2b",
        // Not ours: rt_sigaction(SIGSEGV, {SIG_DFL}, NULL, 8), then return.
        "5:",
        "sub rsp, 40",
        "xor eax, eax",
        "mov qword ptr [rsp], rax",
        "mov qword ptr [rsp + 8], rax",
        "mov qword ptr [rsp + 16], rax",
        "mov qword ptr [rsp + 24], rax",
        "mov edi, {sigsegv}",
        "mov rsi, rsp",
        "xor edx, edx",
        "mov r10d, 8",
        "mov eax, {rt_sigaction}",
        "syscall",
        "add rsp, 40",
        "ret",
        table = sym TABLE,
        ranges = const offset_of!(Table, ranges),
        range = const offset_of!(Table, range),
        range_size = const size_of::<Range>(),
        pages = const PAGES_AT,
        rx = const libc::PROT_READ | libc::PROT_EXEC,
        mprotect = const libc::SYS_mprotect,
        sigsegv = const libc::SIGSEGV,
        rt_sigaction = const libc::SYS_rt_sigaction,
    )
}

/// A system call without the C library (whose pages may be closed). The
/// fourth argument is 8: rt_sigaction's signal set size, which the other
/// calls made here ignore.
fn syscall3(number: libc::c_long, a: usize, b: usize, c: usize) -> isize {
    let ret: isize;
    // SAFETY: the callers pass calls that only change this process's
    // mappings of its own code (mprotect, madvise of whole pages inside
    // its code ranges) or unmap the table, or query its signal action
    // into a buffer they own.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") number as isize => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            in("r10") 8usize,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// In a learning run: notes fault `name` (first used at `file`:`line`), so
/// that the server registers it before its runs and they need not (a
/// registration allocates, and a child's first allocation costs it copies
/// of the allocator's pages). Names that do not fit are left out.
pub(super) fn note_fault(name: &str, file: &str, line: u32) {
    let table = TABLE.load(Ordering::Acquire);
    if table.is_null() {
        return;
    }
    // SAFETY: while learning, the table is mapped and this process (a
    // learning run, one at a time) is the only one writing it.
    let t = unsafe { &mut *table };
    let need = 12 + name.len() + file.len();
    let Some(entry) = t.faults.get_mut(t.faults_len..t.faults_len + need) else {
        return;
    };
    let (head, text) = entry.split_at_mut(12);
    head[..4].copy_from_slice(&line.to_le_bytes());
    head[4..8].copy_from_slice(&(name.len() as u32).to_le_bytes());
    head[8..].copy_from_slice(&(file.len() as u32).to_le_bytes());
    text[..name.len()].copy_from_slice(name.as_bytes());
    text[name.len()..].copy_from_slice(file.as_bytes());
    t.faults_len += need;
}

/// The code being learned; see the module doc.
pub(super) struct Learning {
    table: *mut Table,
    len: usize,
    old: libc::sigaction,
}

impl Learning {
    /// Closes the code and starts recording, or `None` when learning is
    /// off or cannot work here. The process must have one thread.
    pub(super) fn start() -> Option<Learning> {
        if std::env::var_os(LEARN_ENV).is_some_and(|v| v == "0") {
            return None;
        }
        // SAFETY: queries of this thread's signal mask into a local set.
        let blocked = unsafe {
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask) != 0
                || libc::sigismember(&mask, libc::SIGSEGV) != 0
        };
        if blocked {
            // A blocked SIGSEGV would end the process at its first fault.
            return None;
        }
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        let (code, shared) = mappings(&maps)?;
        let pages: usize = code.iter().map(|&(s, e)| (e - s) / PAGE).sum();
        let len = (PAGES_AT + pages).next_multiple_of(PAGE);
        // SAFETY: a fresh anonymous mapping; checked below.
        let table = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if table == libc::MAP_FAILED {
            return None;
        }
        let table = table as *mut Table;
        // SAFETY: the mapping is zeroed, `len` bytes, page aligned; Table
        // is plain integers, so zero is a valid value, and we are its only
        // user until the handler is installed.
        let t = unsafe { &mut *table };
        let mut first = 0;
        for (i, &(start, end)) in code.iter().enumerate() {
            t.range[i] = Range { start, end, first };
            first += (end - start) / PAGE;
        }
        t.ranges = code.len();
        t.shared_at[..shared.len()].copy_from_slice(&shared);
        t.shared = shared.len();
        debug_assert_eq!(first, pages);

        // SAFETY: installs a handler that touches only the table and makes
        // two system calls; the old action is kept to be put back.
        let old = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fault as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
            libc::sigemptyset(&mut action.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGSEGV, &action, &mut old) != 0 {
                libc::munmap(table as *mut libc::c_void, len);
                return None;
            }
            old
        };
        TABLE.store(table, Ordering::Release);
        // The pages that must stay open: the handler's, and the one the
        // kernel returns through from it (the C library's restorer, read
        // back from the kernel: sa_restorer is the third word).
        let mut kernel_action = [0usize; 4];
        syscall3(
            libc::SYS_rt_sigaction,
            libc::SIGSEGV as usize,
            0,
            kernel_action.as_mut_ptr() as usize,
        );
        let handler = on_fault as *const () as usize;
        let keep = [
            handler & !(PAGE - 1),
            (handler + HANDLER_BYTES - 1) & !(PAGE - 1),
            kernel_action[2] & !(PAGE - 1),
        ];
        for &(start, end) in &code {
            let mut page = start;
            while page < end {
                let run = page;
                while page < end && !keep.contains(&page) {
                    page += PAGE;
                }
                if page > run {
                    syscall3(
                        libc::SYS_mprotect,
                        run,
                        page - run,
                        libc::PROT_NONE as usize,
                    );
                }
                page += PAGE;
            }
        }
        Some(Learning { table, len, old })
    }

    /// In the learning run, right after fork: replaces each shared
    /// writable mapping with a private copy, so that nothing this run
    /// writes there (the region: coverage, decisions, events) reaches the
    /// executor. Ends the process if it cannot.
    pub(super) fn privatize(&self) {
        // SAFETY: the table is ours (see `start`).
        let t = unsafe { &*self.table };
        for &(start, end) in &t.shared_at[..t.shared] {
            let len = end - start;
            // SAFETY: a fresh private mapping, filled with the shared
            // one's bytes, then moved over it: the same addresses, now
            // private to this process. Nothing else runs meanwhile.
            unsafe {
                let copy = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if copy == libc::MAP_FAILED {
                    libc::_exit(125);
                }
                std::ptr::copy_nonoverlapping(start as *const u8, copy as *mut u8, len);
                let moved = libc::mremap(
                    copy,
                    len,
                    len,
                    libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                    start as *mut libc::c_void,
                );
                if moved == libc::MAP_FAILED {
                    libc::_exit(125);
                }
            }
        }
    }

    /// In the server: waits for the learning run `pid` to end, at most
    /// until `deadline`, then kills what is left of it and reaps it with
    /// `reap`.
    pub(super) fn wait(
        &self,
        pid: libc::pid_t,
        deadline: Instant,
        reap: impl Fn(libc::pid_t, i32) -> bool,
    ) {
        while Instant::now() < deadline {
            if reap(pid, libc::WNOHANG) {
                return;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        // SAFETY: killing the learning run's own process group.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
            libc::kill(pid, libc::SIGKILL);
        }
        reap(pid, 0);
    }

    /// In the server: the faults learning runs noted ([`note_fault`]):
    /// name, file and line, in the order they were first used.
    pub(super) fn faults(&self) -> Vec<(String, String, u32)> {
        // SAFETY: the table is ours; no learning run is going.
        let t = unsafe { &*self.table };
        let mut bytes = &t.faults[..t.faults_len.min(FAULT_BYTES)];
        let mut faults = Vec::new();
        while bytes.len() >= 12 {
            let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
            let (line, name_len, file_len) = (word(0), word(4) as usize, word(8) as usize);
            let Some(text) = bytes.get(12..12 + name_len + file_len) else {
                break;
            };
            let (name, file) = text.split_at(name_len);
            faults.push((
                String::from_utf8_lossy(name).into_owned(),
                String::from_utf8_lossy(file).into_owned(),
                line,
            ));
            bytes = &bytes[12 + name_len + file_len..];
        }
        faults
    }

    /// In the server: keeps mapped exactly the pages recorded (its own and
    /// the learning run's), opens its code again and stops recording.
    pub(super) fn finish(self) {
        // Still traced: what runs from here on is recorded as it runs, so
        // nothing below drops a page it still needs. First the one C
        // library call made after the code is opened.
        // SAFETY: a query of the current action into a local.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGSEGV, std::ptr::null(), &mut current);
        }
        // SAFETY: the table is ours; the handler writes only bytes of it.
        let t = unsafe { &*self.table };
        let marks = (self.table as usize + PAGES_AT) as *const u8;
        let ran = |i: usize| {
            // SAFETY: `i` is below the number of pages (the ranges' sum),
            // inside the mapping; a byte the handler may set.
            unsafe { std::ptr::read_volatile(marks.add(i)) != 0 }
        };
        for r in &t.range[..t.ranges] {
            let pages = (r.end - r.start) / PAGE;
            // Map every page that ran (closed ones fault and open alone).
            for j in 0..pages {
                if ran(r.first + j) {
                    // SAFETY: a page of our own code mapping, read.
                    unsafe { std::ptr::read_volatile((r.start + j * PAGE) as *const u8) };
                }
            }
            // Drop every other one.
            let mut j = 0;
            while j < pages {
                let gap = j;
                while j < pages && !ran(r.first + j) {
                    j += 1;
                }
                if j > gap {
                    syscall3(
                        libc::SYS_madvise,
                        r.start + gap * PAGE,
                        (j - gap) * PAGE,
                        libc::MADV_DONTNEED as usize,
                    );
                }
                j += 1;
            }
        }
        // Open the code again: each range becomes one mapping again.
        for r in &t.range[..t.ranges] {
            let rx = (libc::PROT_READ | libc::PROT_EXEC) as usize;
            syscall3(libc::SYS_mprotect, r.start, r.end - r.start, rx);
        }
        // SAFETY: putting back the action `start` replaced.
        unsafe { libc::sigaction(libc::SIGSEGV, &self.old, std::ptr::null_mut()) };
        TABLE.store(std::ptr::null_mut(), Ordering::Release);
        syscall3(libc::SYS_munmap, self.table as usize, self.len, 0);
    }
}

/// Addresses `[start, end)`.
type Span = (usize, usize);

/// The executable file mappings (code) and the shared writable ones, from
/// `/proc/self/maps`; `None` if there are more than the table holds.
fn mappings(maps: &str) -> Option<(Vec<Span>, Vec<Span>)> {
    let mut code = Vec::new();
    let mut shared = Vec::new();
    for (start, end, perms, path) in super::map_entries(maps) {
        if super::is_code(perms, path) {
            code.push((start, end));
        } else if perms.starts_with("rw") && perms.ends_with('s') {
            shared.push((start, end));
        }
    }
    (!code.is_empty() && code.len() <= MAX_RANGES && shared.len() <= MAX_SHARED)
        .then_some((code, shared))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_and_shared_mappings_are_read_from_maps() {
        let maps = "\
5555-6666 r--p 00000000 fe:00 1 /bin/prog
6666-7777 r-xp 00001000 fe:00 1 /bin/prog
7777-8888 rw-s 00000000 00:01 2 /dev/shm/dst-region-1-0
8888-9999 rw-p 00000000 00:00 0
9999-aaaa r-xp 00000000 00:00 0 [vdso]
";
        let (code, shared) = mappings(maps).unwrap();
        assert_eq!(code, vec![(0x6666, 0x7777)]);
        assert_eq!(shared, vec![(0x7777, 0x8888)]);
        assert!(mappings("8888-9999 rw-p 00000000 00:00 0\n").is_none());
    }
}
