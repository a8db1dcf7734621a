//! A static riscv64 Linux program in the emulator: its ELF loaded with
//! `object`, the stack laid out as Linux does (argc, argv, envp, auxv), and
//! the system calls answered deterministically. Threads (`clone`, `futex`,
//! preemption) are in [`super::threads`].

use object::{Object, ObjectSegment};

use super::cpu::{Cpu, EXEC, Icache, Memory, PAGE, READ, Stop, WRITE};
use crate::guest::{GuestMemory, SETUP_COMPLETE, Sites};

/// The first of dst's own `ecall` numbers ("DST\0"; Linux's are below
/// 1024): `DST_ECALL + n` is `crate::guest` call n (`dst_riscv.c`).
pub const DST_ECALL: u64 = 0x4453_5400;

impl GuestMemory for Memory {
    fn c_string(&self, address: u64, max: usize) -> Option<Vec<u8>> {
        Memory::c_string(self, address, max).ok()
    }
}

/// The application kernel works on the emulator's memory.
impl Guest for Memory {
    fn read(&self, at: u64, out: &mut [u8]) -> Result<(), u64> {
        Memory::read(self, at, out)
    }
    fn write(&mut self, at: u64, bytes: &[u8]) -> Result<(), u64> {
        Memory::write(self, at, bytes)
    }
    fn c_string(&self, at: u64, max: usize) -> Result<Vec<u8>, u64> {
        Memory::c_string(self, at, max)
    }
    fn map(&mut self, start: u64, len: u64, prot: u8) {
        Memory::map(self, start, len, prot)
    }
    fn unmap(&mut self, start: u64, len: u64) {
        Memory::unmap(self, start, len)
    }
    fn protect(&mut self, start: u64, len: u64, prot: u8) -> bool {
        Memory::protect(self, start, len, prot)
    }
    fn zero(&mut self, start: u64, len: u64) {
        Memory::zero(self, start, len)
    }
}
use super::threads::{POLL, Parts, SLEEP, Stall, State, Threads, Why};
use dst::decision::{Kind, Value};
use dst::protocol::SiteText;
use dst::region::Layout;

use crate::guest::Recorder;

/// Where the stack ends (grows down from here) and how big it is.
const STACK_TOP: u64 = 0x7FFF_F000_0000;
use crate::linux::{Cause, Context, Guest, Kernel, Outcome, Regs, SA_RESTART, STACK_SIZE};
/// The realtime clock at the start of every run (one epoch for every level).
pub(super) use dst::world::clock::EPOCH_NS;

/// How a program run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// `exit` or `exit_group` with this status.
    Status(i32),
    /// A signal: SIGSEGV with the address, SIGILL, SIGABRT (abort).
    Signal { signal: i32, pc: u64, address: u64 },
    /// A system call the emulator does not implement (by number), or a
    /// use of one it does not (`what`).
    Unsupported {
        number: u64,
        what: Option<&'static str>,
    },
    /// Every live thread waits in `futex` with no timeout: (tid, futex
    /// address, pc) of each.
    Deadlock { waiting: Vec<(u64, u64, u64)> },
    /// The instruction budget ran out.
    OutOfInstructions,
    /// The program called `dst_setup_complete` while its setup ran
    /// ([`Machine::run_setup`]).
    SetupComplete,
    /// The world crashed the node (`sim: node crash`, at a call that
    /// touches its files): its file system kept what the crash decided,
    /// and the program starts again ([`Machine::restart_from`]).
    Crashed,
    /// A node of a cluster ([`Threads::idle_exit`]): every thread waits,
    /// for a file's readiness (bytes from the network) or until `until`
    /// (virtual nanoseconds), the earliest deadline. The cluster runs it
    /// again when either comes.
    Idle { until: Option<u64> },
}

/// Crashes of the node one run may have (then no more are offered).
pub const MAX_CRASHES: u32 = 3;

/// The number a crash is listed under in [`Machine::calls`].
pub const CRASHED: u64 = 0xFFFF_0000;

/// Why a file is not a program the emulator runs (one line each).
pub fn check(bytes: &[u8]) -> Result<object::File<'_>, String> {
    let file = crate::elf::parse(bytes)?;
    if file.architecture() != object::Architecture::Riscv64 {
        return Err(format!("not a riscv64 program: {:?}", file.architecture()));
    }
    if let object::File::Elf64(elf) = &file {
        use object::read::elf::ProgramHeader;
        let endian = elf.endian();
        if elf
            .elf_program_headers()
            .iter()
            .any(|p| p.p_type(endian) == object::elf::PT_INTERP)
        {
            return Err(
                "not a static program (it asks for a dynamic loader): build it with -static".into(),
            );
        }
    }
    Ok(file)
}

/// The program's machine.
#[derive(Clone)]
pub struct Machine {
    /// Virtual nanoseconds since the run started: it advances by a
    /// nanosecond per instruction retired (a nominal 1 GHz core), each
    /// clock reading adds a decided step (as the wasm executor's WASI
    /// clock), and when every thread waits it jumps to the earliest
    /// deadline (in a cluster: the cluster's time).
    pub now: u64,
    /// Instructions retired when `now` last took them into account.
    timed: u64,
    /// The node's realtime clock's offset from the world's (a cluster's
    /// clock skew), in nanoseconds.
    pub skew: i64,
    /// The running thread's registers.
    pub cpu: Cpu,
    pub memory: Memory,
    /// The program's application kernel: its address space, descriptors,
    /// output and signal table (`crate::linux`).
    pub kernel: Kernel,
    /// System calls made: (number, result); a crash as [`CRASHED`].
    pub calls: Vec<(u64, i64)>,
    /// Crashes of the node so far in this run.
    pub crashes: u32,
    /// The guest threads and their schedule (`threads.current` runs, its
    /// registers in `cpu`).
    pub threads: Threads,
    /// The dst.h assertion sites of the program (`super::guest`).
    pub(super) sites: std::sync::Arc<Sites>,
    /// Setup is running: `dst_setup_complete` stops it.
    pub(super) in_setup: bool,
    /// Decoded instructions, shared by every copy of the machine (they
    /// run the same code; see `Icache` for writes to it).
    icache: std::sync::Arc<std::sync::Mutex<Icache>>,
    /// Writes the run's decisions, assertions and events into a region:
    /// the executor's ([`Machine::record_into`]), else a small one of the
    /// machine's own, for a machine run by itself (nominal decisions).
    pub recorder: Recorder,
}

fn align(value: u64, to: u64) -> u64 {
    value.div_ceil(to) * to
}

impl Machine {
    /// Loads `bytes` (a static riscv64 ELF) with `args` (`argv[0]` first).
    pub fn load(bytes: &[u8], args: &[String], env: &[String]) -> Result<Machine, String> {
        Machine::load_file(&check(bytes)?, args, env)
    }

    /// Loads `file`, a program [`check`] accepted.
    pub fn load_file(
        file: &object::File<'_>,
        args: &[String],
        env: &[String],
    ) -> Result<Machine, String> {
        let mut memory = Memory::default();
        let mut exec = (u64::MAX, 0);
        let mut end = 0;
        let mut phdr = 0;
        let mut protections: Vec<(u64, u64, u8)> = Vec::new();
        for segment in file.segments() {
            let (address, size) = (segment.address(), segment.size());
            let p_flags = match segment.flags() {
                object::SegmentFlags::Elf { p_flags } => p_flags,
                _ => object::elf::PF_R,
            };
            let prot = [
                (object::elf::PF_R, READ),
                (object::elf::PF_W, WRITE),
                (object::elf::PF_X, EXEC),
            ]
            .iter()
            .filter(|(flag, _)| p_flags & flag != 0)
            .fold(0, |prot, (_, bit)| prot | bit);
            memory.map(address, size, READ | WRITE);
            let data = segment
                .data()
                .map_err(|e| format!("a segment cannot be read: {e}"))?;
            memory
                .write(address, data)
                .map_err(|_| "a segment is outside its mapping".to_string())?;
            end = end.max(address + size);
            if prot & EXEC != 0 {
                exec = (exec.0.min(address), exec.1.max(address + size));
            }
            protections.push((address, size, prot));
            let (offset, _) = segment.file_range();
            if offset == 0 {
                phdr = address;
            }
        }
        let (phoff, phentsize, phnum) = match &file {
            object::File::Elf64(elf) => {
                let header = elf.elf_header();
                let e = elf.endian();
                (
                    header.e_phoff.get(e),
                    u64::from(header.e_phentsize.get(e)),
                    u64::from(header.e_phnum.get(e)),
                )
            }
            _ => return Err("not a 64-bit ELF".into()),
        };
        for &(address, size, prot) in &protections {
            memory.protect(address, size, prot);
        }
        // A page at the edge of two segments gets both protections.
        for &(address, size, _) in &protections {
            for page in [address / PAGE, (address + size).div_ceil(PAGE) - 1] {
                let union = protections
                    .iter()
                    .filter(|&&(a, s, _)| a / PAGE <= page && page < (a + s).div_ceil(PAGE))
                    .fold(0, |p, &(_, _, q)| p | q);
                memory.protect(page * PAGE, PAGE, union);
            }
        }
        if exec.0 < exec.1 {
            memory.exec = exec;
        }
        let brk = align(end, PAGE);
        memory.map(STACK_TOP - STACK_SIZE, STACK_SIZE, READ | WRITE);
        crate::linux::Signals::map_vdso(&mut memory);
        let mut machine = Machine {
            now: 0,
            timed: 0,
            skew: 0,
            cpu: Cpu::default(),
            memory,
            kernel: Kernel::new(brk),
            calls: Vec::new(),
            crashes: 0,
            threads: Threads::main(),
            sites: std::sync::Arc::new(Sites::of(file)),
            in_setup: false,
            icache: Default::default(),
            recorder: crate::guest::recorder(Layout {
                input_capacity: 0,
                coverage_size: 0,
                sites_capacity: 1,
                decisions_capacity: 1 << 12,
                events_capacity: 1 << 12,
            }),
        };
        machine.cpu.pc = file.entry();
        machine.cpu.x[2] = machine.stack(args, env, phdr + phoff, phentsize, phnum, file.entry());
        Ok(machine)
    }

    /// Lays out the initial stack; returns the stack pointer.
    fn stack(
        &mut self,
        args: &[String],
        env: &[String],
        phdr: u64,
        phent: u64,
        phnum: u64,
        entry: u64,
    ) -> u64 {
        let mut top = STACK_TOP - 64;
        let mut put = |memory: &mut Memory, bytes: &[u8]| {
            top -= bytes.len() as u64;
            memory.write(top, bytes).expect("the stack is mapped");
            top
        };
        // 16 bytes for AT_RANDOM: fixed (a decision later).
        let random = put(&mut self.memory, &[0x5A; 16]);
        let mut strings = |items: &[String], memory: &mut Memory| -> Vec<u64> {
            items
                .iter()
                .map(|s| {
                    let mut bytes = s.as_bytes().to_vec();
                    bytes.push(0);
                    put(memory, &bytes)
                })
                .collect()
        };
        let argv = strings(args, &mut self.memory);
        let envp = strings(env, &mut self.memory);
        let auxv: [(u64, u64); 8] = [
            (3, phdr),    // AT_PHDR
            (4, phent),   // AT_PHENT
            (5, phnum),   // AT_PHNUM
            (6, PAGE),    // AT_PAGESZ
            (9, entry),   // AT_ENTRY
            (25, random), // AT_RANDOM
            (16, 0),      // AT_HWCAP
            (0, 0),       // AT_NULL
        ];
        let mut words: Vec<u64> = vec![args.len() as u64];
        words.extend(&argv);
        words.push(0);
        words.extend(&envp);
        words.push(0);
        for (key, value) in auxv {
            words.push(key);
            words.push(value);
        }
        let sp = (top - 8 * words.len() as u64) & !15;
        for (i, word) in words.iter().enumerate() {
            self.memory
                .store(sp + 8 * i as u64, 8, *word)
                .expect("the stack is mapped");
        }
        sp
    }

    /// Runs the program's setup, to be the snapshot every run starts from:
    /// to its `main` (the C library's start, which takes decisions of its
    /// own, such as malloc's random key, stays out of every run), then on
    /// to its `dst_setup_complete` call when it makes one. Setup that ends
    /// the program or runs out of `budget` is `Err`; a program that returns
    /// without calling `dst_setup_complete` leaves the snapshot at `main`.
    pub fn run_setup(&mut self, main: Option<u64>, budget: u64) -> Result<(), Exit> {
        let limit = self.cpu.retired + budget;
        let mut scratch = [0u8; 1];
        if let Some(main) = main {
            let shared = self.icache.clone();
            let mut icache = shared.lock().unwrap_or_else(|p| p.into_inner());
            while self.cpu.pc != main {
                if self.cpu.retired >= limit {
                    return Err(Exit::OutOfInstructions);
                }
                let stop = self.cpu.retired + 1;
                if let Some(exit) = self.run_slice(stop, &mut scratch, &mut icache) {
                    return Err(exit);
                }
            }
        }
        if !self.sites.setup_call {
            return Ok(());
        }
        let at_main = self.clone();
        self.in_setup = true;
        match self.run_with(limit.saturating_sub(self.cpu.retired), &mut scratch) {
            Exit::SetupComplete => {
                self.in_setup = false;
                Ok(())
            }
            _ => {
                *self = at_main;
                Ok(())
            }
        }
    }

    /// Runs until the program exits or `budget` instructions are spent.
    pub fn run(&mut self, budget: u64) -> Exit {
        self.run_with(budget, &mut [0])
    }

    /// [`Machine::run`], counting each taken branch or jump as the edge
    /// (pc, target) in `edges` (hashed).
    pub fn run_with(&mut self, budget: u64, edges: &mut [u8]) -> Exit {
        let limit = self.cpu.retired + budget;
        let shared = self.icache.clone();
        let mut icache = shared.lock().unwrap_or_else(|p| p.into_inner());
        if icache.tainted {
            icache.flush();
            icache.tainted = false;
        }
        loop {
            if self.cpu.retired >= limit {
                self.pass_time();
                return Exit::OutOfInstructions;
            }
            if !self.threads.current_runnable() {
                // A node of a cluster that was idle: time passed or bytes
                // came, and a thread may run again.
                if let Err(exit) = self.schedule(Why::Block) {
                    return exit;
                }
                continue;
            }
            if self.cpu.retired >= self.threads.slice_end {
                if let Err(exit) = self.schedule(Why::Preempt) {
                    return exit;
                }
                continue;
            }
            // A signal for the thread about to run is delivered now, on
            // its way back to the program (after a system call or a
            // switch), as Linux delivers it.
            if self.kernel.signals.any_pending()
                && let Some(signal) = self.kernel.signals.take(self.threads.tid())
                && let Some(exit) = self.signal(signal, Cause::Sent)
            {
                return exit;
            }
            let stop = limit.min(self.threads.slice_end);
            if let Some(exit) = self.run_slice(stop, edges, &mut icache) {
                return exit;
            }
        }
    }

    /// Runs the current thread until `stop` instructions are retired or a
    /// system call was made (which may switch threads); `Some` when the
    /// run ends.
    fn run_slice(&mut self, stop: u64, edges: &mut [u8], icache: &mut Icache) -> Option<Exit> {
        debug_assert!(self.threads.current < self.threads.len());
        debug_assert_eq!(
            self.threads.list[self.threads.current].state,
            State::Runnable,
            "only a runnable thread runs"
        );
        while self.cpu.retired < stop {
            let from = self.cpu.pc;
            let retired = self.cpu.retired;
            match self.cpu.step(&mut self.memory, icache) {
                Ok(()) => {
                    debug_assert_eq!(self.cpu.x[0], 0, "x0 reads zero");
                    debug_assert!(self.cpu.retired > retired, "a step retires");
                    let to = self.cpu.pc;
                    let step = to.wrapping_sub(from);
                    if step != 2 && step != 4 {
                        let hash = (from.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ to)
                            .wrapping_mul(0xFF51_AFD7_ED55_8CCD);
                        let slot = (hash >> 40) as usize % edges.len().max(1);
                        if let Some(counter) = edges.get_mut(slot) {
                            *counter = counter.wrapping_add(1);
                        }
                    }
                }
                Err(Stop::Ecall) => {
                    self.cpu.pc += 4;
                    self.cpu.retired += 1;
                    return self.syscall();
                }
                Err(Stop::Ebreak) => {
                    return Some(Exit::Signal {
                        signal: 5,
                        pc: self.cpu.pc,
                        address: 0,
                    });
                }
                Err(Stop::Fault { address }) => {
                    // SEGV_ACCERR where a page is mapped, else SEGV_MAPERR.
                    let code = if self.memory.is_mapped(address) { 2 } else { 1 };
                    if let Some(exit) = self.fault(11, code, address) {
                        return Some(exit);
                    }
                }
                Err(Stop::Misaligned { address }) => {
                    if let Some(exit) = self.fault(7, 1, address) {
                        return Some(exit);
                    }
                }
                Err(Stop::Illegal { .. }) => {
                    if let Some(exit) = self.fault(4, 1, self.cpu.pc) {
                        return Some(exit);
                    }
                }
            }
        }
        None
    }

    /// One system call (number in a7, arguments in a0..a5, result to a0);
    /// `Some` when it ends the run.
    fn syscall(&mut self) -> Option<Exit> {
        let x = self.cpu.x;
        let (number, a0, a1, a2) = (x[17], x[10], x[11], x[12]);
        self.pass_time();
        // The node may crash before a call that touches its files takes
        // effect (or before it exits): a decision of the world's nemesis.
        if self.kernel.crashable
            && self.crashes < MAX_CRASHES
            && self
                .kernel
                .crash_point(number, &[x[10], x[11], x[12], x[13], x[14], x[15]])
            && dst::world::Decide::fault(&mut self.recorder, dst::world::Fault::NodeCrash)
        {
            self.crashes += 1;
            self.kernel.fs.crash(&mut self.recorder);
            self.calls.push((CRASHED, 0));
            return Some(Exit::Crashed);
        }
        let unsupported = |what| Some(Exit::Unsupported { number, what });
        let mut point = None;
        let result: i64 = match number {
            93 if self.threads.len() > 1 => match self.parts(|t, m| t.exit_thread(m, a0 as i32)) {
                Some(status) => return Some(Exit::Status(status)),
                None => {
                    point = Some(Why::Exit);
                    0
                }
            },
            93 | 94 => return Some(Exit::Status(a0 as i32)),
            220 => match self.parts(|t, m| t.clone_thread(m, a0, a1, a2, x[13], x[14])) {
                Ok(tid) => {
                    point = Some(Why::Clone);
                    self.kernel
                        .signals
                        .thread_created(self.threads.tid(), tid as u64);
                    tid
                }
                Err(what) => return unsupported(Some(what)),
            },
            435 => {
                // clone3(args, size): flags, pidfd, child_tid, parent_tid,
                // exit_signal, stack, stack_size, tls
                let mut args = [0u64; 8];
                for (k, arg) in args.iter_mut().enumerate() {
                    *arg = self.memory.load(a0 + 8 * k as u64, 8).unwrap_or(0);
                }
                let [flags, _, child, parent, _, stack, size, tls] = args;
                let top = if stack == 0 { 0 } else { stack + size };
                match self.parts(|t, m| t.clone_thread(m, flags, top, parent, tls, child)) {
                    Ok(tid) => {
                        point = Some(Why::Clone);
                        self.kernel
                            .signals
                            .thread_created(self.threads.tid(), tid as u64);
                        tid
                    }
                    Err(what) => return unsupported(Some(what)),
                }
            }
            98 => match self.parts(|t, m| t.futex(m, [a0, a1, a2, x[13], x[14], x[15]])) {
                Ok((result, waits)) => {
                    point = Some(if waits { Why::Wait } else { Why::Wake });
                    result
                }
                Err(what) => return unsupported(Some(what)),
            },
            101 | 115 => {
                // nanosleep(req, rem), clock_nanosleep(clock, flags, req,
                // rem): virtual time passes, and others may run.
                let (clock, flags, req) = if number == 101 {
                    (1, 0, a0)
                } else {
                    (a0, a1, a2)
                };
                match (self.memory.load(req, 8), self.memory.load(req + 8, 8)) {
                    (Ok(s), Ok(ns)) => {
                        let t = s.saturating_mul(1_000_000_000).saturating_add(ns);
                        let deadline = if flags & 1 != 0 {
                            let epoch = if clock == 0 {
                                EPOCH_NS.saturating_add_signed(self.skew)
                            } else {
                                0
                            };
                            t.saturating_sub(epoch)
                        } else {
                            self.now.saturating_add(t)
                        };
                        // The thread waits until virtual time reaches its
                        // deadline: others run meanwhile.
                        self.threads.block_on(SLEEP, Some(deadline));
                        point = Some(Why::Sleep);
                        0
                    }
                    _ => -14,
                }
            }
            96 => {
                // set_tid_address: the tid
                let me = self.threads.current;
                self.threads.list[me].clear_tid = a0;
                self.threads.tid() as i64
            }
            178 => self.threads.tid() as i64, // gettid
            139 => {
                // rt_sigreturn: the registers come back from the frame,
                // a0 included (no result is written over it).
                let mut regs = self.regs();
                let tid = self.threads.tid();
                return match self.kernel.signals.sigreturn(&self.memory, tid, &mut regs) {
                    Ok(()) => {
                        self.set_regs(&regs);
                        self.calls.push((number, regs.x[10] as i64));
                        None
                    }
                    Err(outcome) => Some(self.ended(outcome, number)),
                };
            }
            130 | 131
                if !self.threads.list.iter().any(|t| {
                    t.tid == if number == 130 { a0 } else { a1 } && t.state != State::Exited
                }) =>
            {
                -3 // ESRCH
            }
            278 => self.random(a0, a1), // getrandom
            113 => {
                // clock_gettime(clock, timespec): virtual time
                let now = self.tick()
                    + if a0 == 0 {
                        EPOCH_NS.saturating_add_signed(self.skew)
                    } else {
                        0
                    };
                let mut spec = [0u8; 16];
                spec[..8].copy_from_slice(&(now / 1_000_000_000).to_le_bytes());
                spec[8..].copy_from_slice(&(now % 1_000_000_000).to_le_bytes());
                match self.memory.write(a1, &spec) {
                    Ok(()) => 0,
                    Err(_) => -14,
                }
            }
            169 => {
                // gettimeofday(tv, tz): virtual time
                let now = self.tick() + EPOCH_NS.saturating_add_signed(self.skew);
                let mut tv = [0u8; 16];
                tv[..8].copy_from_slice(&(now / 1_000_000_000).to_le_bytes());
                tv[8..].copy_from_slice(&(now % 1_000_000_000 / 1_000).to_le_bytes());
                match (a0, self.memory.write(a0, &tv)) {
                    (0, _) | (_, Ok(())) => 0,
                    _ => -14,
                }
            }
            124 => {
                point = Some(Why::Yield);
                0
            }
            n if (DST_ECALL..DST_ECALL + 256).contains(&n) => match crate::guest::call(
                &mut self.recorder,
                n - DST_ECALL,
                [x[10], x[11], x[12], x[13], x[14], x[15]],
                &self.memory,
                &self.sites,
            ) {
                Ok(_) if self.in_setup && n == DST_ECALL + SETUP_COMPLETE => {
                    self.cpu.x[10] = 0;
                    return Some(Exit::SetupComplete);
                }
                Ok(result) => result,
                Err(what) => return unsupported(Some(what)),
            },
            _ => {
                let ctx = Context {
                    tid: self.threads.tid(),
                    pc: self.cpu.pc - 4,
                    now: self.now,
                };
                let args = [x[10], x[11], x[12], x[13], x[14], x[15]];
                let outcome = self.kernel.call(&mut self.memory, ctx, number, args);
                if self.kernel.take_woken() {
                    // A file's readiness changed: blocked calls run again.
                    self.threads.wake(&mut self.cpu, POLL, u64::MAX, u32::MAX);
                }
                match outcome {
                    Outcome::Return(result) => result,
                    Outcome::Random { at, len } => self.random(at, len),
                    Outcome::Block { deadline } => {
                        // The thread waits at its ecall, and makes the call
                        // again when woken (a0 still holds its argument).
                        self.cpu.pc -= 4;
                        self.threads.block_on(POLL, deadline);
                        return self.schedule(Why::Block).err();
                    }
                    outcome @ (Outcome::Killed(_) | Outcome::Unsupported(_)) => {
                        self.cpu.pc -= 4;
                        let exit = self.ended(outcome, number);
                        self.cpu.pc += 4;
                        return Some(exit);
                    }
                    Outcome::NotMine => return unsupported(None),
                }
            }
        };
        if number < DST_ECALL {
            self.calls.push((number, result));
        }
        self.cpu.x[10] = result as u64;
        match point {
            Some(why) => self.schedule(why).err(),
            None => None,
        }
    }

    /// Virtual time takes in the instructions retired since it last did:
    /// a nanosecond each.
    fn pass_time(&mut self) {
        debug_assert!(self.cpu.retired >= self.timed, "instructions only grow");
        self.now = self.now.saturating_add(self.cpu.retired - self.timed);
        self.timed = self.cpu.retired;
    }

    /// One clock reading: virtual time advances by the decided step
    /// (`dst::world::clock`).
    fn tick(&mut self) -> u64 {
        let step = dst::world::clock::step(
            &mut self.recorder,
            "dst emulator: clock",
            "dst emulator: clock jump",
        );
        self.now = self.now.saturating_add(step);
        self.now
    }

    /// `len` random bytes at `at` (`getrandom`, `/dev/urandom`): a
    /// decision's bytes. The number written, or EFAULT.
    fn random(&mut self, at: u64, len: u64) -> i64 {
        let mut bytes = vec![0; len.min(1 << 16) as usize];
        self.decide(
            Kind::Fill,
            "dst emulator: getrandom",
            &mut bytes,
            Value::Hash,
        );
        match self.memory.write(at, &bytes) {
            Ok(()) => bytes.len() as i64,
            Err(_) => -14,
        }
    }

    /// This machine (the program at its start) takes over from `crashed`,
    /// a run of it that the world crashed: the node's file system as the
    /// crash left it, the run's recorder, clock, output and calls go on.
    pub fn restart_from(&mut self, crashed: &mut Machine) {
        debug_assert!(crashed.crashes > 0, "only a crashed run restarts");
        self.kernel.fs = std::mem::take(&mut crashed.kernel.fs);
        self.kernel.stdout = std::mem::take(&mut crashed.kernel.stdout);
        self.kernel.stderr = std::mem::take(&mut crashed.kernel.stderr);
        self.calls = std::mem::take(&mut crashed.calls);
        self.crashes = crashed.crashes;
        self.now = crashed.now;
        self.timed = self.cpu.retired;
        self.skew = crashed.skew;
        std::mem::swap(&mut self.recorder, &mut crashed.recorder);
    }

    /// A signal from outside the process (a cluster's SIGTERM when it
    /// stops a node), as `kill` sends one: to the first live thread that
    /// does not block it (else the first, where it waits), which stops
    /// waiting to take it. `Some` when its default action ends the
    /// process.
    pub fn signal_process(&mut self, signal: u64) -> Option<Exit> {
        let live: Vec<u64> = self
            .threads
            .list
            .iter()
            .filter(|t| t.state != State::Exited)
            .map(|t| t.tid)
            .collect();
        let target = live
            .iter()
            .copied()
            .find(|&tid| !self.kernel.signals.blocks(tid, signal))
            .or(live.first().copied())?;
        match self.kernel.signals.send(target, signal) {
            outcome @ (Outcome::Killed(_) | Outcome::Unsupported(_)) => {
                Some(self.ended(outcome, 129))
            }
            _ => {
                if self.kernel.signals.handles(target, signal) {
                    let restart = self.kernel.signals.action(signal).flags & SA_RESTART != 0;
                    if let Some(number) = self.threads.interrupt(&mut self.cpu, target, restart) {
                        self.kernel.interrupted(target);
                        self.calls.push((number, -4)); // EINTR
                    }
                }
                None
            }
        }
    }

    /// Wakes the threads blocked in a system call when a file's readiness
    /// changed outside a call of theirs (bytes from another node).
    pub fn wake_pollers(&mut self) {
        if self.kernel.take_woken() {
            self.threads.wake(&mut self.cpu, POLL, u64::MAX, u32::MAX);
        }
    }

    /// The running thread's registers, as a signal frame holds them.
    fn regs(&self) -> Regs {
        Regs {
            x: self.cpu.x,
            f: self.cpu.f,
            pc: self.cpu.pc,
            fcsr: self.cpu.fcsr,
        }
    }

    fn set_regs(&mut self, regs: &Regs) {
        self.cpu.x = regs.x;
        self.cpu.x[0] = 0;
        self.cpu.f = regs.f;
        self.cpu.pc = regs.pc;
        self.cpu.fcsr = regs.fcsr;
        self.cpu.reservation = None;
    }

    /// How the run ends when the kernel says so (at the current pc).
    fn ended(&self, outcome: Outcome, number: u64) -> Exit {
        match outcome {
            Outcome::Killed(signal) => Exit::Signal {
                signal,
                pc: self.cpu.pc,
                address: 0,
            },
            Outcome::Unsupported(what) => Exit::Unsupported { number, what },
            Outcome::Return(_)
            | Outcome::NotMine
            | Outcome::Block { .. }
            | Outcome::Random { .. } => {
                unreachable!("only an ending outcome ends the run")
            }
        }
    }

    /// Delivers `signal` to the running thread (its handler called, or
    /// its default action taken); `Some` when that ends the run.
    fn signal(&mut self, signal: u64, cause: Cause) -> Option<Exit> {
        let mut regs = self.regs();
        let tid = self.threads.tid();
        match self
            .kernel
            .signals
            .deliver(&mut self.memory, tid, signal, cause, &mut regs)
        {
            Ok(()) => {
                self.set_regs(&regs);
                None
            }
            Err(outcome) => Some(self.ended(outcome, 129)),
        }
    }

    /// A fault of the running thread's instruction at `pc`: its handler
    /// runs if it has one, else the run ends with the signal there.
    fn fault(&mut self, signal: u64, code: i32, address: u64) -> Option<Exit> {
        if self.kernel.signals.handles(self.threads.tid(), signal) {
            return self.signal(signal, Cause::Fault { code, address });
        }
        Some(Exit::Signal {
            signal: signal as i32,
            pc: self.cpu.pc,
            address,
        })
    }
}

impl Machine {
    /// Writes runs into `recorder`'s region from now on (the executor's).
    pub fn record_into(&mut self, recorder: Recorder) {
        self.recorder = recorder;
    }

    /// A decision of the system layer at the site named `name`.
    /// Runs `f` on the thread table with the parts of the machine its
    /// operations use.
    fn parts<T>(&mut self, f: impl FnOnce(&mut Threads, &mut Parts<'_>) -> T) -> T {
        let mut parts = Parts {
            cpu: &mut self.cpu,
            memory: &mut self.memory,
            now: &mut self.now,
            recorder: &mut self.recorder,
            skew: self.skew,
        };
        f(&mut self.threads, &mut parts)
    }

    /// A scheduling point of the running thread ([`Threads::schedule`]);
    /// `Err` when no thread can run (a deadlock).
    fn schedule(&mut self, why: Why) -> Result<(), Exit> {
        self.pass_time();
        self.parts(|t, m| t.schedule(m, why))
            .map_err(|stall| match stall {
                Stall::Deadlock(waiting) => Exit::Deadlock { waiting },
                Stall::Idle => Exit::Idle {
                    until: self.threads.next_deadline(),
                },
            })
    }

    pub(super) fn decide(&mut self, kind: Kind, name: &str, bytes: &mut [u8], value: Value) -> u64 {
        self.recorder
            .decide_at(kind, SiteText::named(name), bytes, value)
    }
}

/// The name of riscv64 Linux system call `number` (asm-generic numbering),
/// for messages; "unknown" past the table.
pub fn syscall_name(number: u64) -> &'static str {
    if (DST_ECALL..DST_ECALL + 256).contains(&number) {
        return "dst";
    }
    if number == CRASHED {
        return "[node crash: restarted]";
    }
    const NAMES: &[(u64, &str)] = &[
        (17, "getcwd"),
        (19, "eventfd2"),
        (20, "epoll_create1"),
        (21, "epoll_ctl"),
        (22, "epoll_pwait"),
        (23, "dup"),
        (24, "dup3"),
        (25, "fcntl"),
        (29, "ioctl"),
        (34, "mkdirat"),
        (35, "unlinkat"),
        (38, "renameat"),
        (43, "statfs"),
        (44, "fstatfs"),
        (45, "truncate"),
        (46, "ftruncate"),
        (47, "fallocate"),
        (48, "faccessat"),
        (49, "chdir"),
        (53, "fchmodat"),
        (54, "fchownat"),
        (56, "openat"),
        (57, "close"),
        (59, "pipe2"),
        (61, "getdents64"),
        (62, "lseek"),
        (63, "read"),
        (64, "write"),
        (65, "readv"),
        (66, "writev"),
        (67, "pread64"),
        (68, "pwrite64"),
        (71, "sendfile"),
        (72, "pselect6"),
        (73, "ppoll"),
        (78, "readlinkat"),
        (79, "newfstatat"),
        (80, "fstat"),
        (81, "sync"),
        (82, "fsync"),
        (83, "fdatasync"),
        (85, "timerfd_create"),
        (86, "timerfd_settime"),
        (87, "timerfd_gettime"),
        (88, "utimensat"),
        (93, "exit"),
        (94, "exit_group"),
        (96, "set_tid_address"),
        (98, "futex"),
        (99, "set_robust_list"),
        (101, "nanosleep"),
        (113, "clock_gettime"),
        (114, "clock_getres"),
        (115, "clock_nanosleep"),
        (120, "sched_getscheduler"),
        (121, "sched_getparam"),
        (122, "sched_setaffinity"),
        (123, "sched_getaffinity"),
        (124, "sched_yield"),
        (125, "sched_get_priority_max"),
        (129, "kill"),
        (130, "tkill"),
        (131, "tgkill"),
        (132, "sigaltstack"),
        (134, "rt_sigaction"),
        (135, "rt_sigprocmask"),
        (136, "rt_sigpending"),
        (139, "rt_sigreturn"),
        (140, "setpriority"),
        (141, "getpriority"),
        (154, "setpgid"),
        (155, "getpgid"),
        (157, "setsid"),
        (160, "uname"),
        (163, "getrlimit"),
        (164, "setrlimit"),
        (165, "getrusage"),
        (166, "umask"),
        (167, "prctl"),
        (169, "gettimeofday"),
        (172, "getpid"),
        (173, "getppid"),
        (174, "getuid"),
        (175, "geteuid"),
        (176, "getgid"),
        (177, "getegid"),
        (178, "gettid"),
        (179, "sysinfo"),
        (198, "socket"),
        (199, "socketpair"),
        (200, "bind"),
        (201, "listen"),
        (202, "accept"),
        (203, "connect"),
        (204, "getsockname"),
        (205, "getpeername"),
        (206, "sendto"),
        (207, "recvfrom"),
        (208, "setsockopt"),
        (209, "getsockopt"),
        (210, "shutdown"),
        (214, "brk"),
        (215, "munmap"),
        (216, "mremap"),
        (220, "clone"),
        (221, "execve"),
        (222, "mmap"),
        (226, "mprotect"),
        (227, "msync"),
        (228, "mlock"),
        (232, "mincore"),
        (233, "madvise"),
        (242, "accept4"),
        (260, "wait4"),
        (261, "prlimit64"),
        (267, "syncfs"),
        (276, "renameat2"),
        (278, "getrandom"),
        (279, "memfd_create"),
        (283, "membarrier"),
        (291, "statx"),
        (293, "rseq"),
        (435, "clone3"),
        (439, "faccessat2"),
    ];
    NAMES
        .iter()
        .find(|(n, _)| *n == number)
        .map_or("unknown", |(_, name)| name)
}
