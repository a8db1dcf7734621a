//! A freestanding x86-64 guest (built by `cargo dst-fuzz cc --kvm`) behind
//! the one executor trait.
//!
//! Load: the ELF's segments are copied to their link addresses in guest
//! memory, the stack is at the top, the vCPU starts at the entry point
//! and the guest runtime's start-up runs until it reports that it is at
//! `main` (or, when the program calls `dst_setup_complete`, until that
//! call; setup takes the nominal decisions, once). That is the snapshot:
//! the registers, the FPU state, and the bytes of the known writable set
//! (the program's .data and .bss, its stack). A run copies the writable
//! set back, sets the registers and enters the guest.
//!
//! During a run, a dst.h call the guest runtime cannot answer itself is
//! one hypercall exit answered by `crate::guest` through the executor's
//! recorder of the run protocol, on the region in guest memory, as the emulator answers its
//! `ecall`s (so a program takes the same decisions natively, on the
//! emulator and here); CPUID faults and is answered from the VM's table;
//! RDTSC faults (CR4.TSD, where KVM applies it: not on kvm-pvm) and is
//! answered with virtual time, a decision; `main`'s return ends the run
//! (nonzero is a finding).
//! Exceptions are crash findings placed by the ELF's DWARF; a guest that
//! outlives the timeout is kicked out by the watchdog (a timeout
//! finding). Edge counts are read from the runtime's map after each run.
//!
//! Not yet: a stack unwind at crashes. Dirty logging is the alternative
//! reset ([`Reset::DirtyLog`]; copying the writable set is what the note
//! measured fastest on kvm-pvm).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use dst::catalog::SiteInfo;
use dst::region::{Layout, Region, RegionRef};
use dst_kernel::executor::region_map;
use dst_kernel::{Coverage, End, Executor, Map};
use kvm_bindings::{kvm_fpu, kvm_regs};
use object::{Object, ObjectSegment, ObjectSymbol};

use super::vm::{Exit, PROGRAM_BASE, Vm};
use super::watchdog::Watchdog;
use crate::guest::{GuestMemory, Recorder, SETUP_COMPLETE, Sites};
use crate::symbolize::Symbolizer;

/// Guest memory.
const MEMORY: usize = 32 << 20;
/// Where the region is in guest memory (the guest runtime's `DST_REGION`):
/// past the program space, below the stack.
pub const REGION_AT: u64 = 16 << 20;
/// Where the run's tail bytes are in guest memory (the runtime's
/// `DST_TAIL`): the decision stream past the input's explicit bytes, which
/// the SDK generates from the input's seed (ChaCha8), written there by the
/// host before each run so that the guest reads them without an exit.
pub const TAIL_AT: u64 = 30 << 20;
/// Tail bytes provided per run (a decision past them is a hypercall):
/// generating them is per-run work (64 KiB took a quarter of a run).
pub const TAIL_BYTES: usize = 8 << 10;
/// Bytes of the header that describe the layout (everything before the
/// per-run fields), restored after a run that wrote over them.
const LAYOUT_BYTES: usize = std::mem::offset_of!(dst::region::Header, run_id);
/// The stack, at the top of guest memory.
const STACK: u64 = 256 << 10;
/// Bytes of the runtime's edge map (`__dst_edges`).
const EDGES: usize = 1 << 16;
/// The runtime's own calls (dst.h's are `crate::guest`'s).
const AT_MAIN: u64 = 100;
const EXIT: u64 = 101;
/// The runtime found a region of another layout (magic, version) than
/// the one it was built for: (magic, version) in its arguments.
const BAD_REGION: u64 = 102;

/// Why a file is not a guest this executor runs (one line each).
pub fn check(bytes: &[u8]) -> Result<object::File<'_>, String> {
    let file = crate::elf::parse(bytes)?;
    if file.architecture() != object::Architecture::X86_64 {
        return Err(format!("not an x86-64 guest: {:?}", file.architecture()));
    }
    let Some(edges) = file.symbol_by_name("__dst_edges") else {
        return Err(
            "not a dst KVM guest (no __dst_edges): build it with cargo dst-fuzz cc --kvm".into(),
        );
    };
    if edges.address() < PROGRAM_BASE || edges.address() + EDGES as u64 > REGION_AT {
        return Err(format!(
            "its edge map at {:#x} is outside the program",
            edges.address()
        ));
    }
    for segment in file.segments() {
        let (start, end) = (segment.address(), segment.address() + segment.size());
        if start < PROGRAM_BASE || end > REGION_AT {
            return Err(format!(
                "a segment at {start:#x}..{end:#x} is outside the guest's program space \
                 ({PROGRAM_BASE:#x}..{REGION_AT:#x})"
            ));
        }
    }
    Ok(file)
}

struct Snapshot {
    regs: kvm_regs,
    fpu: kvm_fpu,
    /// The writable set's bytes, by range.
    ranges: Vec<(u64, Vec<u8>)>,
    /// With [`Reset::DirtyLog`]: all of guest memory below the region.
    whole: Vec<u8>,
}

/// How a run puts guest memory back as it was at the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// Copy the known writable set back (the program's .data and .bss, its
    /// stack): the default, measured faster here (`docs/benchmarks.md`).
    Copy,
    /// Ask KVM which pages the guest wrote (dirty logging) and copy those.
    DirtyLog,
}

/// Runs a KVM guest; see the module docs.
pub struct Kvm {
    vm: Vm,
    snapshot: Snapshot,
    /// The region in guest memory, borrowed (declared after `vm`, so
    /// dropped after it; a borrowed region frees nothing).
    region: Arc<Region>,
    /// Writes what the guest runtime hands the host into the region.
    recorder: Recorder,
    flags: u64,
    catalog: Vec<SiteInfo>,
    sites: Sites,
    /// Where the runtime's edge map is in guest memory (the executor's
    /// edge map: the explorer reads it there).
    edges_at: u64,
    /// The vCPU left CPL 3 (an exception): the next restore sets the
    /// segments too.
    left_user_mode: bool,
    /// The header's layout fields as written.
    layout: Vec<u8>,
    timeout: Duration,
    watchdog: Watchdog,
    symbols: Symbolizer,
    /// Virtual nanoseconds (RDTSC) of the current run.
    now: u64,
    /// Exits to the VMM in the last run.
    pub exits: u64,
    reset: Reset,
    /// Pages the last reset restored (dirty logging).
    dirty: usize,
}

/// Guest memory as the dst calls read it.
struct Guest<'a>(&'a [u8]);

impl GuestMemory for Guest<'_> {
    fn c_string(&self, address: u64, max: usize) -> Option<Vec<u8>> {
        let start = usize::try_from(address).ok()?;
        let bytes = self.0.get(start..)?;
        let bytes = &bytes[..bytes.len().min(max)];
        let end = bytes.iter().position(|&b| b == 0)?;
        Some(bytes[..end].to_vec())
    }
}

impl Kvm {
    /// The guest at `path`; `Err` is one line (not a guest, or no KVM).
    pub fn open(path: &Path, timeout: Duration) -> Result<Kvm, String> {
        Kvm::open_with(path, timeout, Reset::Copy)
    }

    /// [`Kvm::open`] with a reset strategy.
    pub fn open_with(path: &Path, timeout: Duration, reset: Reset) -> Result<Kvm, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
        let file = check(&bytes)?;
        let catalog = crate::elf::guest_catalog(&file)?;
        let sites = Sites::of(&file);
        let symbol = |name: &str| file.symbol_by_name(name).map(|s| s.address());
        let edges_at = symbol("__dst_edges").expect("checked");
        let mut vm = Vm::with_dirty_log(MEMORY, reset == Reset::DirtyLog).map_err(|e| e.0)?;
        let mut writable = Vec::new();
        for segment in file.segments() {
            let data = segment
                .data()
                .map_err(|e| format!("a segment cannot be read: {e}"))?;
            let at = segment.address() as usize;
            vm.memory_mut()[at..at + data.len()].copy_from_slice(data);
            if let object::SegmentFlags::Elf { p_flags } = segment.flags()
                && p_flags & object::elf::PF_W != 0
            {
                writable.push((segment.address(), segment.size()));
            }
        }
        if let (Some(start), Some(end)) =
            (symbol("__dst_writable_start"), symbol("__dst_writable_end"))
        {
            writable = vec![(start, end - start)];
        }
        writable.push((MEMORY as u64 - STACK, STACK));
        // The region in guest memory, so that the guest takes decisions and
        // records assertions without an exit: a fresh region's bytes copied
        // to REGION_AT, then borrowed there.
        let fresh = Region::new(Layout {
            sites_capacity: catalog.len(),
            coverage_size: crate::inprocess::DECISION_COVERAGE,
            ..Layout::default()
        });
        let len = fresh.view().sections().total_size;
        if REGION_AT as usize + len > TAIL_AT as usize {
            return Err(format!(
                "the guest's catalog is too large ({} sites)",
                catalog.len()
            ));
        }
        // SAFETY: the fresh region's memory is `len` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(fresh.view().base(), len) };
        let at = REGION_AT as usize;
        vm.memory_mut()[at..at + len].copy_from_slice(bytes);
        let layout = bytes[..LAYOUT_BYTES].to_vec();
        // SAFETY: guest memory stays mapped for the life of `vm`, which the
        // returned executor owns with the region and its only other holder,
        // its recorder; a borrowed region frees nothing.
        let region = unsafe { Region::borrowed(vm.memory_mut()[at..].as_mut_ptr(), len) }
            .map_err(|e| format!("the region in guest memory: {e:?}"))?;
        let region = Arc::new(region);
        vm.reset_cpu(file.entry(), MEMORY as u64 - 8)
            .map_err(|e| e.0)?;
        let byte: *mut u8 = &mut vm.vcpu.get_kvm_run().immediate_exit;
        // SAFETY: the byte is in the vCPU's kvm_run mapping, which lives as
        // long as `vm`; the watchdog is armed only inside `Kvm`'s methods,
        // while `vm` is alive (declared first, it is dropped first, when
        // the watchdog is unarmed).
        let watchdog = unsafe { Watchdog::new(byte) };
        let mut kvm = Kvm {
            vm,
            snapshot: Snapshot {
                regs: kvm_regs::default(),
                fpu: kvm_fpu::default(),
                ranges: Vec::new(),
                whole: Vec::new(),
            },
            reset,
            dirty: 0,
            recorder: Recorder::new(Arc::clone(&region)),
            region,
            flags: 0,
            catalog,
            sites,
            edges_at,
            left_user_mode: true,
            layout,
            timeout,
            watchdog,
            symbols: Symbolizer::for_static(path, &file),
            now: 0,
            exits: 0,
        };
        kvm.setup(&writable, symbol("dst_setup_complete").is_some())?;
        Ok(kvm)
    }

    /// Runs the start-up to `main` (and on to `dst_setup_complete` when
    /// the program has it) and takes the snapshot there.
    fn setup(&mut self, writable: &[(u64, u64)], setup_call: bool) -> Result<(), String> {
        self.region.view().reset(&[], 0);
        self.watchdog.arm(self.timeout.max(Duration::from_secs(10)));
        let started = self.run_until(AT_MAIN);
        let result = match started {
            Err(End::Crash(dst_kernel::Outcome::Crash { cause, message, .. }))
                if cause == "region" =>
            {
                Err(message)
            }
            Err(end) => Err(format!("the guest ended before its main function: {end:?}")),
            Ok(()) => self.take_snapshot(writable).and_then(|()| {
                if !setup_call {
                    return Ok(());
                }
                match self.run_until(SETUP_COMPLETE) {
                    Ok(()) => self.take_snapshot(writable),
                    Err(_) => self.restore(), // returned without calling it: main it is
                }
            }),
        };
        self.watchdog.disarm();
        result
    }

    /// Bytes the last run's reset copied back.
    pub fn restored_bytes(&self) -> usize {
        match self.reset {
            Reset::Copy => self.snapshot.ranges.iter().map(|(_, b)| b.len()).sum(),
            Reset::DirtyLog => self.dirty * 4096,
        }
    }

    /// Completes the port I/O the last exit left pending, without running
    /// the guest (KVM_RUN with `immediate_exit`, as the KVM API documents):
    /// on hardware KVM the OUT instruction is skipped only at the next
    /// KVM_RUN, which would skip an instruction of whatever state the
    /// executor sets (a snapshot's, a resumed program's); kvm-pvm has
    /// already skipped it, and this is a no-op there.
    fn complete_io(&mut self) {
        self.vm.vcpu.get_kvm_run().immediate_exit = 1;
        let _ = self.vm.vcpu.run();
        self.watchdog.clear_unless_fired();
    }

    fn take_snapshot(&mut self, writable: &[(u64, u64)]) -> Result<(), String> {
        self.complete_io();
        let regs = self
            .vm
            .vcpu
            .get_regs()
            .map_err(|e| format!("get_regs: {e}"))?;
        let fpu = self
            .vm
            .vcpu
            .get_fpu()
            .map_err(|e| format!("get_fpu: {e}"))?;
        let mut ranges: Vec<(u64, Vec<u8>)> = writable
            .iter()
            .map(|&(at, len)| {
                (
                    at,
                    self.vm.memory()[at as usize..(at + len) as usize].to_vec(),
                )
            })
            .collect();
        // Every run starts with no edges counted (start-up code counted
        // some).
        for (at, bytes) in &mut ranges {
            let start = self.edges_at.saturating_sub(*at) as usize;
            if self.edges_at >= *at && start < bytes.len() {
                let end = (start + EDGES).min(bytes.len());
                bytes[start..end].fill(0);
            }
        }
        let whole = if self.reset == Reset::DirtyLog {
            let mut whole = self.vm.memory()[..REGION_AT as usize].to_vec();
            let at = self.edges_at as usize;
            whole[at..at + EDGES].fill(0);
            // The log restarts here: what setup wrote is in the copy.
            self.vm.dirty_pages().map_err(|e| e.0)?;
            whole
        } else {
            Vec::new()
        };
        self.snapshot = Snapshot {
            regs,
            fpu,
            ranges,
            whole,
        };
        Ok(())
    }

    fn restore(&mut self) -> Result<(), String> {
        self.complete_io();
        match self.reset {
            Reset::Copy => {
                for (at, bytes) in &self.snapshot.ranges {
                    let at = *at as usize;
                    self.vm.memory_mut()[at..at + bytes.len()].copy_from_slice(bytes);
                }
            }
            Reset::DirtyLog => {
                let pages = self.vm.dirty_pages().map_err(|e| e.0)?;
                self.dirty = pages.len();
                let stack = (MEMORY as u64 - STACK) as usize;
                for page in pages {
                    let at = page as usize * 4096;
                    if at < self.snapshot.whole.len() {
                        let from = &self.snapshot.whole[at..at + 4096];
                        self.vm.memory_mut()[at..at + 4096].copy_from_slice(from);
                    } else if at >= stack {
                        // The stack: from the copy-reset set.
                        if let Some((start, bytes)) = self
                            .snapshot
                            .ranges
                            .iter()
                            .find(|(s, _)| *s as usize == stack)
                        {
                            let off = at - *start as usize;
                            let from = &bytes[off..off + 4096];
                            self.vm.memory_mut()[at..at + 4096].copy_from_slice(from);
                        }
                    }
                }
            }
        }
        let mut regs = self.snapshot.regs;
        regs.rax = 0;
        if std::mem::take(&mut self.left_user_mode) {
            self.vm.resume_user(&regs).map_err(|e| e.0)?;
        } else {
            // The last run ended at CPL 3 (a hypercall, a timeout): only
            // the registers change.
            self.vm
                .vcpu
                .set_regs(&regs)
                .map_err(|e| format!("set_regs: {e}"))?;
        }
        self.vm
            .vcpu
            .set_fpu(&self.snapshot.fpu)
            .map_err(|e| format!("set_fpu: {e}"))
    }

    /// Runs until the runtime makes call `wanted` (Ok), or the run ends
    /// some other way (Err with how).
    fn run_until(&mut self, wanted: u64) -> Result<(), End> {
        loop {
            match self.step() {
                Step::Call(n) if n == wanted => return Ok(()),
                Step::Call(_) => {}
                Step::End(end) => return Err(end),
            }
        }
    }

    /// Runs the guest to its next exit and handles it.
    fn step(&mut self) -> Step {
        self.exits += 1;
        match self.vm.run() {
            Exit::Hypercall([n, args @ ..]) => {
                let [a0, a1, a2, a3, a4, a5] = args;
                match n {
                    AT_MAIN => Step::Call(AT_MAIN),
                    BAD_REGION => Step::End(End::crash(
                        "region",
                        format!(
                            "the guest's runtime was built for another region layout (it read magic {a0:#x}, version {a1}; this executor's is version {}): rebuild the guest",
                            dst::region::VERSION
                        ),
                        None,
                    )),
                    EXIT if a0 == 0 => Step::End(End::Ok),
                    EXIT => Step::End(End::crash(
                        "exit",
                        format!("main returned {}", a0 as i32),
                        None,
                    )),
                    n => {
                        let memory = Guest(self.vm.memory());
                        let args = [a0, a1, a2, a3, a4, a5];
                        match crate::guest::call(&mut self.recorder, n, args, &memory, &self.sites)
                        {
                            Ok(result) => {
                                if let Err(e) = self.set_rax(result as u64) {
                                    return Step::End(End::crash("vm", e, None));
                                }
                                Step::Call(n)
                            }
                            Err(what) => Step::End(End::crash(
                                "unsupported call",
                                format!("hypercall {n}: the executor does not implement {what}"),
                                None,
                            )),
                        }
                    }
                }
            }
            Exit::Exception {
                vector: 13, rip, ..
            } if self.vm.memory().get(rip as usize..rip as usize + 2) == Some(&[0x0F, 0xA2]) => {
                match self.answer_cpuid(rip) {
                    Ok(()) => Step::Call(u64::MAX),
                    Err(e) => Step::End(End::crash("vm", e, None)),
                }
            }
            Exit::Exception {
                vector: 13, rip, ..
            } if self.is_rdtsc(rip).is_some() => match self.answer_rdtsc(rip) {
                Ok(()) => Step::Call(u64::MAX),
                Err(e) => Step::End(End::crash("vm", e, None)),
            },
            Exit::Exception {
                vector,
                error,
                rip,
                cr2,
            } => {
                self.left_user_mode = true;
                Step::End(self.exception(vector, error, rip, cr2))
            }
            Exit::Interrupted => Step::End(End::Timeout),
            Exit::Stopped(why) => {
                self.left_user_mode = true;
                Step::End(End::crash(
                    "triple fault",
                    format!("the virtual machine stopped: {why}"),
                    None,
                ))
            }
        }
    }

    fn set_rax(&mut self, value: u64) -> Result<(), String> {
        let mut regs = self
            .vm
            .vcpu
            .get_regs()
            .map_err(|e| format!("get_regs: {e}"))?;
        regs.rax = value;
        self.vm
            .vcpu
            .set_regs(&regs)
            .map_err(|e| format!("set_regs: {e}"))
    }

    /// Answers a faulting CPUID from the VM's table and returns after it.
    fn answer_cpuid(&mut self, rip: u64) -> Result<(), String> {
        self.complete_io();
        let (_, rflags, rsp) = self
            .vm
            .exception_frame()
            .ok_or("cannot read the exception frame")?;
        let mut regs = self
            .vm
            .vcpu
            .get_regs()
            .map_err(|e| format!("get_regs: {e}"))?;
        let (a, b, c, d) = self.vm.cpuid(regs.rax as u32, regs.rcx as u32);
        (regs.rax, regs.rbx, regs.rcx, regs.rdx) = (a.into(), b.into(), c.into(), d.into());
        regs.rip = rip + 2;
        regs.rsp = rsp;
        regs.rflags = rflags;
        self.vm.resume_user(&regs).map_err(|e| e.0)
    }

    /// The length of the RDTSC (2) or RDTSCP (3) at `rip`, if it is one.
    fn is_rdtsc(&self, rip: u64) -> Option<u64> {
        let code = self.vm.memory().get(rip as usize..rip as usize + 3)?;
        match code {
            [0x0F, 0x31, _] => Some(2),
            [0x0F, 0x01, 0xF9] => Some(3),
            _ => None,
        }
    }

    /// Answers an RDTSC with virtual time (`dst::world::clock`) and returns to
    /// the program after it.
    fn answer_rdtsc(&mut self, rip: u64) -> Result<(), String> {
        let len = self.is_rdtsc(rip).expect("checked");
        self.complete_io();
        let (_, rflags, rsp) = self
            .vm
            .exception_frame()
            .ok_or("cannot read the exception frame")?;
        self.now +=
            dst::world::clock::step(&mut self.recorder, "dst kvm: rdtsc", "dst kvm: rdtsc jump");
        let mut regs = self
            .vm
            .vcpu
            .get_regs()
            .map_err(|e| format!("get_regs: {e}"))?;
        // The stub pushed the error code and vector over the program's
        // frame; the program's registers are otherwise as it left them.
        regs.rip = rip + len;
        regs.rsp = rsp;
        regs.rflags = rflags;
        regs.rax = self.now & 0xFFFF_FFFF;
        regs.rdx = self.now >> 32;
        if len == 3 {
            regs.rcx = 0;
        }
        self.vm.resume_user(&regs).map_err(|e| e.0)
    }

    /// The crash an exception is.
    fn exception(&mut self, vector: u8, error: u64, rip: u64, cr2: u64) -> End {
        let place = self.symbols.frame(rip, false).place();
        let (cause, detail) = match vector {
            0 => ("divide error", String::new()),
            6 => ("invalid opcode", String::new()),
            8 => ("double fault", String::new()),
            13 => ("general protection", format!(" (error code {error:#x})")),
            14 => (
                "page fault",
                format!(
                    " at address {cr2:#x} ({}{})",
                    if error & 2 != 0 { "write" } else { "read" },
                    if error & 1 != 0 {
                        ", protection"
                    } else {
                        ", not present"
                    }
                ),
            ),
            _ => ("exception", format!(" (vector {vector})")),
        };
        End::crash(
            cause,
            format!("{cause}{detail} in {place} (rip {rip:#x})"),
            Some(place),
        )
    }
}

enum Step {
    Call(u64),
    End(End),
}

impl Kvm {
    /// Writes the tail of `input`'s decision stream at [`TAIL_AT`].
    fn write_tail(&mut self, input: &[u8]) {
        let mut stream = dst::decision::Stream::new(dst::decision::tail_seed(input));
        let mut explicit = vec![0; dst::decision::explicit(input).len()];
        stream.read(input, &mut explicit);
        let at = TAIL_AT as usize;
        stream.read(input, &mut self.vm.memory_mut()[at..at + TAIL_BYTES]);
    }
}

impl Executor for Kvm {
    fn execute(&mut self, input: &[u8]) -> End {
        self.region.view().reset(input, self.flags);
        if self.flags == 0 {
            self.write_tail(input);
        }
        self.exits = 0;
        self.now = 0;
        if let Err(e) = self.restore() {
            return End::crash("vm", e, None);
        }
        self.watchdog.arm(self.timeout);
        let end = loop {
            match self.step() {
                Step::Call(_) => {}
                Step::End(end) => break end,
            }
        };
        let fired = self.watchdog.disarm();
        // A run that wrote over the header is reported as such whatever
        // else it did (as the process executor does): the same input does
        // it again on replay.
        let at = REGION_AT as usize;
        let header = &mut self.vm.memory_mut()[at..at + LAYOUT_BYTES];
        let end = if header != self.layout.as_slice() {
            header.copy_from_slice(&self.layout);
            End::crash("region", "the guest overwrote the region's header", None)
        } else {
            end
        };
        debug_assert!(
            fired || end != End::Timeout,
            "only the watchdog interrupts a run"
        );
        end
    }

    fn region(&self) -> RegionRef<'_> {
        self.region.view()
    }

    fn catalog(&self) -> &[SiteInfo] {
        &self.catalog
    }

    fn coverage(&mut self) -> Coverage<'_> {
        let at = self.edges_at as usize;
        let map = &mut self.vm.memory_mut()[at..at + EDGES];
        // SAFETY: guest memory stays mapped at one address for the life of
        // the VM, which `self` owns; the guest writes the map only inside
        // runs.
        let edges = unsafe { Map::from_raw_parts(map.as_mut_ptr(), EDGES) };
        Coverage {
            edges,
            decisions: region_map(&self.region),
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
}
