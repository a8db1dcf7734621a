//! Which code pages a fork server's runs execute, and which read-only data
//! pages they read, learned once before the first run, so that every forked
//! child starts with exactly those pages mapped: no more (each costs a
//! page-table entry to copy at fork and to tear down at exit) and no fewer
//! (each missing one costs the child a page fault).
//!
//! Why: fork copies a private mapping's page tables only if the mapping
//! has private pages, so the server gives each code mapping one
//! (`share_code_with_children`), and each read-only data mapping one once
//! learning is done ([`Learning::finish`]). Fork then copies every page the
//! server has mapped: its whole start (the dynamic loader, libdst's setup,
//! and the kernel's fault-around, which maps up to 16 neighbours of every
//! page faulted), about 440 code pages for examples/c-kv, of which a run
//! executes about 70. The rest was a fifth of each run's cost. Read-only
//! data is handed on only when learned: all of it cost more than the
//! children's faults it saved (12 us against 6 us a run of c-kv).
//!
//! How: recording a process means closing every code and read-only page (`PROT_NONE`)
//! and installing [`on_fault`] for `SIGSEGV`, which marks the page of each
//! fault in a table shared with the server and opens that page alone.
//! (A system call handed a closed page fails instead, `EFAULT`: a learning
//! run that passes the kernel a constant string, to `open` say, learns less
//! past that.)
//! Before it greets the executor, the server records itself while it makes
//! the calls its loop makes (a read and a write of nothing, a futex wake, a
//! wait), then opens its code again. It then forks [`LEARNING_RUNS`]
//! *learning runs*, one after the other; each records itself, privatizes
//! its copies of the shared mappings (the region: the executor sees
//! nothing of it) and runs the program, the first with the empty input,
//! the others with pseudo-random ones; and one more learning process that
//! records itself while it forks as the server does (the server does not
//! record its own fork: see below). After [`LEARNING_TIME`] the server
//! kills the one going and starts no other. Then it maps every marked page
//! and drops all others (`MADV_DONTNEED`; never a page it has changed,
//! which holds its only copy).
//!
//! A process that blocks `SIGSEGV` while it runs a closed page (the C
//! library does, inside `pthread_create`, `posix_spawn`, and `fork` from
//! glibc 2.41 on) dies there. So the server records only calls that block
//! nothing; a learning process that dies that way has its learning cut
//! short: a threaded program's runs are learned up to their first thread. Learning runs are
//! real executions of the program: their effects on files and other
//! processes happen (a few runs more than the explorer asked for); they
//! dump no core, and whatever they start is killed with them.
//! `DST_FORKSERVER_LEARN=0` turns learning off; the server then hands on
//! what it has mapped. x86-64 only (the handler is assembly); elsewhere
//! nothing is learned.
//!
//! Written here, not taken from a library: this needs a signal handler that
//! runs while any other page of the program may be closed, so it may call
//! nothing, not even the C library (a call into a closed page would fault
//! again forever); and the kernel tells an unprivileged process nothing
//! else about which of its pages it executed (pagemap has no accessed bit;
//! idle page tracking needs root).

use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use super::LEARN_ENV;

/// Learning runs: the empty input's, then runs of pseudo-random inputs
/// ([`learning_input`]), so that paths the nominal run skips (faults
/// injected, errors handled) are learned too.
pub(super) const LEARNING_RUNS: u8 = 4;
/// All learning runs together stop after this long: the run then going is
/// killed (what it executed by then is learned) and no other starts.
pub(super) const LEARNING_TIME: Duration = Duration::from_secs(1);
/// Bytes of each pseudo-random learning input.
const LEARNING_INPUT: usize = 256;

/// The input of learning run `run` (from 2; the first has the empty
/// input): bytes of splitmix64 seeded with the run's number. Every byte
/// is a decision, so a run of it takes the paths the explorer's mutated
/// inputs take, not only the nominal one.
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
/// The mark of the pages the server itself runs while traced.
pub(super) const SERVER_RUN: u8 = LEARNING_RUNS + 1;
/// The mark of the pages a fork runs, both sides ([`SERVER_RUN`] cannot
/// trace the server's own fork).
pub(super) const FORK_RUN: u8 = LEARNING_RUNS + 2;
/// Bytes of `on_fault` kept open, from its first instruction.
const HANDLER_BYTES: usize = 256;

/// One file mapping learned: code, or read-only data; `[start, end)`, its
/// protection `prot`; its pages' bytes in the table start at `first`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Range {
    start: usize,
    end: usize,
    first: usize,
    prot: usize,
}

/// The shared table (a `MAP_SHARED` anonymous mapping, so that the
/// learning runs' records reach the server), followed by one byte per
/// page of the ranges ([`Learning::mark`]).
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
/// In a learning run, its number (from 1): the mark [`on_fault`] gives
/// the pages this process opened. 0 elsewhere.
static RUN: AtomicU8 = AtomicU8::new(0);

/// The `SIGSEGV` handler while recording (`rdi` signal, `rsi` siginfo,
/// `rdx` context). If the fault is a read or a fetch in a range, marks its
/// page with [`RUN`] and opens it (`mprotect` to the range's protection), and
/// returns: the instruction runs again. Otherwise (a write, a fault
/// elsewhere, an `mprotect` that failed) it puts back the default action
/// and returns, so the access faults again and ends the process as it
/// would have without us.
#[unsafe(naked)]
extern "C" fn on_fault(_signal: i32, _info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    core::arch::naked_asm!(
        "mov rax, qword ptr [rip + {table}]",
        "test rax, rax",
        "jz 5f",
        // A write (bit 1 of the page fault's error code) is not ours.
        "test qword ptr [rdx + {error}], 2",
        "jnz 5f",
        // The faulting address (si_addr, 16 bytes into siginfo), its page.
        "mov r8, qword ptr [rsi + 16]",
        "and r8, -4096",
        "mov rcx, qword ptr [rax + {ranges}]",
        "lea r9, [rax + {range}]",
        "2:",
        "test rcx, rcx",
        "jz 5f",
        "cmp r8, qword ptr [r9 + {start}]",
        "jb 3f",
        "cmp r8, qword ptr [r9 + {end}]",
        "jae 3f",
        // In this range: mark the page's byte, then open the page.
        "mov r10, r8",
        "sub r10, qword ptr [r9 + {start}]",
        "shr r10, 12",
        "add r10, qword ptr [r9 + {first}]",
        "movzx edx, byte ptr [rip + {run}]",
        "mov byte ptr [rax + r10 + {pages}], dl",
        "mov rdi, r8",
        "mov esi, 4096",
        "mov rdx, qword ptr [r9 + {prot}]",
        "mov eax, {mprotect}",
        "syscall",
        "test rax, rax",
        "jnz 5f",
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
        error = const offset_of!(libc::ucontext_t, uc_mcontext)
            + offset_of!(libc::mcontext_t, gregs)
            + libc::REG_ERR as usize * size_of::<libc::greg_t>(),
        table = sym TABLE,
        run = sym RUN,
        ranges = const offset_of!(Table, ranges),
        range = const offset_of!(Table, range),
        start = const offset_of!(Range, start),
        end = const offset_of!(Range, end),
        first = const offset_of!(Range, first),
        range_size = const size_of::<Range>(),
        pages = const PAGES_AT,
        prot = const offset_of!(Range, prot),
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
}

impl Learning {
    /// The table's byte for `page` (in range `r`): nonzero once a run
    /// opened it, the number of the last that did.
    fn mark(&self, r: &Range, page: usize) -> *mut u8 {
        debug_assert!((r.start..r.end).contains(&page));
        (self.table as usize + PAGES_AT + r.first + (page - r.start) / PAGE) as *mut u8
    }

    /// In the server: the table of its code and shared mappings, or
    /// `None` when learning is off or cannot work here.
    pub(super) fn start() -> Option<Learning> {
        if std::env::var_os(LEARN_ENV).is_some_and(|v| v == "0") {
            return None;
        }
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        let (trusted, program) = trusted_objects();
        let (code, shared) = mappings(&maps, &trusted, program)?;
        let pages: usize = code.iter().map(|&(s, e, _)| (e - s) / PAGE).sum();
        let len = (PAGES_AT + pages).next_multiple_of(PAGE);
        let table = crate::shm::anonymous_mapping(len, true).ok()? as *mut Table;
        // SAFETY: the mapping is zeroed, `len` bytes, page aligned; Table
        // is plain integers, so zero is a valid value; no run exists yet.
        let t = unsafe { &mut *table };
        let mut first = 0;
        for (i, &(start, end, prot)) in code.iter().enumerate() {
            t.range[i] = Range {
                start,
                end,
                first,
                prot,
            };
            first += (end - start) / PAGE;
        }
        t.ranges = code.len();
        t.shared_at[..shared.len()].copy_from_slice(&shared);
        t.shared = shared.len();
        debug_assert_eq!(first, pages);
        TABLE.store(table, Ordering::Release);
        Some(Learning { table, len })
    }

    /// Starts recording as run `run` (learning runs from 1; the server
    /// [`SERVER_RUN`]): [`on_fault`] installed, `SIGSEGV` unblocked, every
    /// code page closed but the handler's own and the one the kernel
    /// returns from it through. The action it replaced, or `None` if it
    /// could not start.
    pub(super) fn trace(&self, run: u8) -> Option<libc::sigaction> {
        debug_assert!(run > 0);
        RUN.store(run, Ordering::Relaxed);
        // SAFETY: calls about this process alone, with locals; the handler
        // touches only the table and makes two system calls.
        let previous = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fault as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
            libc::sigemptyset(&mut action.sa_mask);
            let mut unblock: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut unblock);
            libc::sigaddset(&mut unblock, libc::SIGSEGV);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGSEGV, &action, &mut previous) != 0 {
                return None;
            }
            if libc::pthread_sigmask(libc::SIG_UNBLOCK, &unblock, std::ptr::null_mut()) != 0 {
                libc::sigaction(libc::SIGSEGV, &previous, std::ptr::null_mut());
                return None;
            }
            previous
        };
        // The restorer (sa_restorer, the third word of the kernel's
        // action), as the C library set it.
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
        // SAFETY: the table is ours; learning runs go one at a time.
        let t = unsafe { &*self.table };
        for r in &t.range[..t.ranges] {
            let mut page = r.start;
            while page < r.end {
                let run_start = page;
                while page < r.end && !keep.contains(&page) {
                    page += PAGE;
                }
                if page > run_start {
                    syscall3(
                        libc::SYS_mprotect,
                        run_start,
                        page - run_start,
                        libc::PROT_NONE as usize,
                    );
                }
                if page < r.end {
                    // Kept open, so marked: the server needs them too
                    // (its loop shares their pages).
                    // SAFETY: a byte of the mapped table.
                    unsafe { self.mark(r, page).write_volatile(run) };
                }
                page += PAGE;
            }
        }
        Some(previous)
    }

    /// In the server, after [`Learning::trace`]: its code opened again
    /// (each range one mapping again), and `previous` the `SIGSEGV` action.
    pub(super) fn untrace(&self, previous: &libc::sigaction) {
        // SAFETY: the table is ours.
        let t = unsafe { &*self.table };
        for r in &t.range[..t.ranges] {
            syscall3(libc::SYS_mprotect, r.start, r.end - r.start, r.prot);
        }
        // SAFETY: putting back the action `trace` replaced.
        unsafe { libc::sigaction(libc::SIGSEGV, previous, std::ptr::null_mut()) };
        RUN.store(0, Ordering::Relaxed);
    }

    /// In a learning run: dumps no core when it ends by a signal.
    pub(super) fn no_core_dump(&self) {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: a limit of this process, from a local.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) };
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
            let Ok(copy) = crate::shm::anonymous_mapping(len, false) else {
                // SAFETY: ending a learning run, which nobody sees.
                unsafe { libc::_exit(125) };
            };
            // SAFETY: a fresh private mapping, filled with the shared
            // one's bytes, then moved over it: the same addresses, now
            // private to this process. Nothing else runs meanwhile.
            unsafe {
                std::ptr::copy_nonoverlapping(start as *const u8, copy, len);
                let moved = libc::mremap(
                    copy.cast(),
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
    /// until `deadline`, and reaps it; then kills its process group (it,
    /// if it is still going, and whatever it started).
    pub(super) fn wait(&self, pid: libc::pid_t, deadline: Instant) {
        let mut ended = false;
        while !ended && Instant::now() < deadline {
            ended = super::reap(pid, libc::WNOHANG).is_some();
            if !ended {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        // SAFETY: killing the learning run's own process group: it, if it
        // is still going, and whatever it started.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
            libc::kill(pid, libc::SIGKILL);
        }
        if !ended {
            super::reap(pid, 0);
        }
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

    /// In the server: makes each read-only range executable too, so that
    /// the kernel joins it to the code mapping next to it (same file, next
    /// pages, same protection), whose page tables forks copy already: one
    /// mapping for fork to copy and exit to tear down, not two or three
    /// (libc's and the loader's constants and code become one mapping
    /// each). Which ranges were joined to a mapping with private pages;
    /// the others get their protection back.
    fn join_to_code(&self) -> Vec<bool> {
        // SAFETY: the table is ours; no learning run is going.
        let t = unsafe { &*self.table };
        let ranges = &t.range[..t.ranges];
        let rw = (libc::PROT_READ | libc::PROT_WRITE) as usize;
        for r in ranges.iter().filter(|r| r.prot == R) {
            // Writable for a moment first (nothing is written), as code
            // was (`share_code_with_children`): the kernel then counts the
            // mapping as committed memory, as it does the code's, and
            // joins only mappings that agree on that too.
            syscall3(libc::SYS_mprotect, r.start, r.end - r.start, rw);
            syscall3(libc::SYS_mprotect, r.start, r.end - r.start, RX);
        }
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        let mut mappings = Vec::new();
        for line in smaps.lines() {
            if let Some((start, end, perms, _)) = super::map_entries(line).next() {
                mappings.push((start, end, perms == "r-xp", false));
            } else if let Some(kb) = line.strip_prefix("Anonymous:")
                && let Some(last) = mappings.last_mut()
            {
                last.3 = kb.trim().trim_end_matches("kB").trim() != "0";
            }
        }
        ranges
            .iter()
            .map(|r| {
                if r.prot != R {
                    return false;
                }
                let holding = mappings.iter().find(|m| (m.0..m.1).contains(&r.start));
                let joined = holding.is_some_and(|&(start, end, rx, private)| {
                    rx && private && (start < r.start || end > r.end)
                });
                if !joined {
                    syscall3(libc::SYS_mprotect, r.start, r.end - r.start, R);
                }
                joined
            })
            .collect()
    }

    /// In the server: keeps mapped exactly the code pages learning runs
    /// recorded, the pages of `functions` (the server's loop, which only
    /// partly ran traced) and every page it changed (a page of its own, the
    /// only copy of what it holds: relocated or patched code); drops the
    /// rest.
    pub(super) fn finish(self, functions: &[usize]) {
        // SAFETY: the table is ours; no learning run is going.
        let t = unsafe { &*self.table };
        // This function's pages and its callee's, too: what runs once pages
        // start to go must be kept, as a dropped page that runs comes back
        // with its neighbours (fault-around).
        let this = [
            Learning::finish as *const () as usize,
            syscall3 as *const () as usize,
        ];
        for &code in this.iter().chain(functions) {
            let first = code & !(PAGE - 1);
            for page in [first, first + PAGE, first + 2 * PAGE] {
                if let Some(r) = t.range[..t.ranges]
                    .iter()
                    .find(|r| (r.start..r.end).contains(&page))
                {
                    // SAFETY: a byte of the mapped table.
                    unsafe { self.mark(r, page).write_volatile(SERVER_RUN) };
                }
            }
        }
        let joined = self.join_to_code();
        let pagemap = std::fs::File::open("/proc/self/pagemap").ok();
        let keep: Vec<Vec<bool>> = t.range[..t.ranges]
            .iter()
            .map(|r| {
                let pages = (r.end - r.start) / PAGE;
                let own = own_pages(pagemap.as_ref(), r.start, pages);
                // SAFETY: a byte of the mapped table.
                let marked = |i: usize| unsafe { self.mark(r, r.start + i * PAGE).read_volatile() };
                (0..pages).map(|i| marked(i) != 0 || own[i]).collect()
            })
            .collect();
        drop(pagemap);
        // From here on, only code on kept pages: no calls but syscall3.
        let alone = t.range[..t.ranges].iter().zip(&joined);
        for (r, _) in alone.filter(|(r, joined)| r.prot == R && !**joined) {
            // As code was (`share_code_with_children`); the page itself
            // goes below if runs read nothing there: the mapping keeps what
            // makes fork copy.
            super::give_private_page(r.start, r.end, R, |at, len, prot| {
                syscall3(libc::SYS_mprotect, at, len, prot) == 0
            });
        }
        for (r, keep) in t.range[..t.ranges].iter().zip(&keep) {
            super::keep_mapped(r.start, PAGE, keep, |at, len| {
                syscall3(libc::SYS_madvise, at, len, libc::MADV_DONTNEED as usize);
            });
        }
        TABLE.store(std::ptr::null_mut(), Ordering::Release);
        syscall3(libc::SYS_munmap, self.table as usize, self.len, 0);
        // Not freed: the allocator's pages may be gone (a few bytes, once).
        std::mem::forget(keep);
        std::mem::forget(joined);
    }
}

/// Which of the `pages` pages from `start` are this process's own (a
/// private anonymous copy, present or swapped out): dropping one would
/// lose what it holds. All of them when `pagemap` cannot be read.
fn own_pages(pagemap: Option<&std::fs::File>, start: usize, pages: usize) -> Vec<bool> {
    use std::os::unix::fs::FileExt;
    const PRESENT: u64 = 1 << 63;
    const SWAPPED: u64 = 1 << 62;
    const FILE_OR_SHARED: u64 = 1 << 61;
    let mut entries = vec![0u8; pages * 8];
    let read = pagemap.is_some_and(|f| {
        f.read_exact_at(&mut entries, (start / PAGE * 8) as u64)
            .is_ok()
    });
    entries
        .chunks_exact(8)
        .map(|e| {
            let e = u64::from_le_bytes(e.try_into().expect("8 bytes"));
            !read || e & SWAPPED != 0 || (e & PRESENT != 0 && e & FILE_OR_SHARED == 0)
        })
        .collect()
}

/// Addresses `[start, end)`.
type Span = (usize, usize);
/// Addresses `[start, end)` and their protection.
type Protected = (usize, usize, usize);

/// The file mappings to learn, with their protections: code (executable)
/// first, then the read-only data of the objects holding the `trusted`
/// addresses but not the `program` address, as many as the table holds;
/// and the shared writable mappings; from `/proc/self/maps`. `None` if
/// there is no code, or more code or shared mappings than the table holds.
fn mappings(maps: &str, trusted: &[usize], program: usize) -> Option<(Vec<Protected>, Vec<Span>)> {
    let entries: Vec<_> = super::map_entries(maps).collect();
    let path_of = |address: usize| {
        let mut holding = entries
            .iter()
            .filter(|(s, e, _, _)| (*s..*e).contains(&address));
        holding
            .next()
            .map(|e| e.3)
            .filter(|path| path.starts_with('/'))
    };
    let program = path_of(program);
    let trusted: Vec<&str> = trusted
        .iter()
        .filter_map(|&a| path_of(a))
        .filter(|&path| Some(path) != program)
        .collect();
    let mut code = Vec::new();
    let mut data = Vec::new();
    let mut shared = Vec::new();
    for &(start, end, perms, path) in &entries {
        match super::handed_on(perms, path) {
            Some(super::Handed::Code) => code.push((start, end, RX)),
            Some(super::Handed::ReadOnly) if trusted.contains(&path) => data.push((start, end, R)),
            None if perms.starts_with("rw") && perms.ends_with('s') => shared.push((start, end)),
            _ => {}
        }
    }
    if code.is_empty() || code.len() > MAX_RANGES || shared.len() > MAX_SHARED {
        return None;
    }
    let room = MAX_RANGES - code.len();
    code.extend(data.into_iter().take(room));
    Some((code, shared))
}

/// Addresses in the objects whose read-only data is learned: the C
/// library, the dynamic loader and libdst; and the program's entry point
/// (libdst linked into the program is not one of them). Closing a page
/// makes a system call handed a pointer into it fail (`EFAULT`) rather
/// than fault. A program hands the kernel its own constants all the time
/// (file names to open, messages to write), and its learning run would go
/// on differently; these objects rarely do, for a few files of their own
/// (the C library's `/etc/localtime`, its name-service files, the loader's
/// cache), and a learning run then goes on as if the file were missing.
fn trusted_objects() -> (Vec<usize>, usize) {
    // SAFETY: reads of this process's auxiliary vector.
    let (loader, entry) = unsafe {
        (
            libc::getauxval(libc::AT_BASE),
            libc::getauxval(libc::AT_ENTRY),
        )
    };
    let c_library = libc::write as *const () as usize;
    let ours = trusted_objects as *const () as usize;
    (vec![c_library, loader as usize, ours], entry as usize)
}

const RX: usize = (libc::PROT_READ | libc::PROT_EXEC) as usize;
const R: usize = libc::PROT_READ as usize;

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
        // The program's read-only data is not learned; a trusted
        // object's is.
        let (code, shared) = mappings(maps, &[0x5555], 0x6666).unwrap();
        assert_eq!(code, vec![(0x6666, 0x7777, RX)]);
        assert_eq!(shared, vec![(0x7777, 0x8888)]);
        let (code, _) = mappings(maps, &[0x5555], 0x9999).unwrap();
        assert_eq!(code, vec![(0x6666, 0x7777, RX), (0x5555, 0x6666, R)]);
        let (code, _) = mappings(maps, &[0x8888], 0x9999).unwrap();
        assert_eq!(
            code,
            vec![(0x6666, 0x7777, RX)],
            "anonymous: nothing to trust"
        );
        assert!(mappings("8888-9999 rw-p 00000000 00:00 0\n", &[], 0).is_none());
    }
}
