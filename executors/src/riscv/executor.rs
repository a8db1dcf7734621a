//! The emulator behind the one executor trait: a loaded program restored
//! before every run (a copy of the machine as loaded: its memory pages and
//! registers), writing its runs through a recorder of the run protocol
//! over the executor's region (so that `getrandom` and the clock are
//! decisions), a budget of instructions (out
//! of it is a timeout, the same on every replay), and edge coverage from
//! taken branches and jumps.
//!
//! Guest threads that all wait in `futex` are the SDK's own deadlock
//! property (`dst::catalog::BUILTIN`, first in the catalog), with each
//! thread's place as details. A run being explained (`FLAG_TRACE_SITES`)
//! or recorded with events (`FLAG_EVENTS`) also leaves its thread
//! switches as schedule steps, and its output and system calls as the
//! wasm executor's lifecycle events (`crate::guest::STDOUT_EVENT`...), so
//! `replay` shows them. Crash places and schedule steps are named from the
//! ELF's DWARF when it was opened from a file ([`Emulator::open`]).

use std::cell::UnsafeCell;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use dst::catalog::SiteInfo;
use dst::region::{FLAG_EVENTS, FLAG_TRACE_SITES, Layout, Region, RegionRef, Step};
use dst_kernel::executor::region_map;
use dst_kernel::{Coverage, End, Executor, Map};

use super::machine::{Exit, Machine, syscall_name};
use crate::symbolize::{Frame, Symbolizer};

/// Instructions a run may execute unless told.
pub const DEFAULT_BUDGET: u64 = 100_000_000;
/// Bytes of the edge map.
const EDGES: usize = 1 << 16;

/// Runs a static riscv64 program; see the module docs.
pub struct Emulator {
    pub(super) loaded: Machine,
    pub(super) machine: Machine,
    /// The region the machines' recorder writes runs to.
    region: Arc<Region>,
    flags: u64,
    catalog: Vec<SiteInfo>,
    budget: u64,
    edges: Box<[UnsafeCell<u8>]>,
    backstop: Duration,
    symbols: Option<Symbolizer>,
    unwinder: Option<super::unwind::Unwinder>,
}

impl Emulator {
    /// The program in `bytes` with `args` (`argv[0]` first).
    pub fn new(bytes: &[u8], args: &[String], budget: u64) -> Result<Emulator, String> {
        Emulator::of_file(
            &super::machine::check(bytes)?,
            None,
            args,
            &[],
            budget,
            None,
        )
    }

    /// The program at `path` (its DWARF names crash places and schedule
    /// steps).
    pub fn open(path: &Path, args: &[String], budget: u64) -> Result<Emulator, String> {
        Emulator::open_with(path, args, budget, None)
    }

    /// [`Emulator::open`], the program's file system a copy of the host
    /// folder `files` (its working directory, `/`), or empty.
    pub fn open_with(
        path: &Path,
        args: &[String],
        budget: u64,
        files: Option<&Path>,
    ) -> Result<Emulator, String> {
        Emulator::open_env(path, args, &[], budget, files)
    }

    /// [`Emulator::open_with`], with `env` (`KEY=value` each) as the
    /// program's environment.
    pub fn open_env(
        path: &Path,
        args: &[String],
        env: &[String],
        budget: u64,
        files: Option<&Path>,
    ) -> Result<Emulator, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
        Emulator::of_file(
            &super::machine::check(&bytes)?,
            Some(path),
            args,
            env,
            budget,
            files,
        )
    }

    /// The program `file`, parsed once for its loading, catalog, unwinder
    /// and (from `path`, the file it was read from) its symbols.
    fn of_file(
        file: &object::File<'_>,
        path: Option<&Path>,
        args: &[String],
        env: &[String],
        budget: u64,
        files: Option<&Path>,
    ) -> Result<Emulator, String> {
        let mut loaded = Machine::load_file(file, args, env)?;
        if let Some(dir) = files {
            loaded
                .kernel
                .seed(dir)
                .map_err(|e| format!("its files: {e}"))?;
        }
        let catalog = crate::elf::guest_catalog(file)?;
        use object::{Object, ObjectSymbol};
        // The program's own main: a Go program's `main.main`, after its
        // runtime started (its `main` is the runtime's entry), else C's.
        let main = file
            .symbol_by_name("main.main")
            .or_else(|| file.symbol_by_name("main"))
            .map(|s| s.address());
        let region = Arc::new(Region::new(Layout {
            sites_capacity: catalog.len(),
            coverage_size: crate::inprocess::DECISION_COVERAGE,
            ..Layout::default()
        }));
        loaded.record_into(crate::guest::Recorder::new(Arc::clone(&region)));
        // Setup takes the nominal decisions, once.
        region.view().reset(&[], 0);
        loaded
            .run_setup(main, budget)
            .map_err(|exit| format!("the program ended before its main function ({exit:?})"))?;
        Ok(Emulator {
            machine: loaded.clone(),
            loaded,
            region,
            flags: 0,
            catalog,
            budget,
            edges: (0..EDGES).map(|_| UnsafeCell::new(0)).collect(),
            backstop: Duration::from_secs(10),
            symbols: path.map(|path| Symbolizer::for_static(path, file)),
            unwinder: super::unwind::Unwinder::of(file),
        })
    }

    /// Guest `pc` symbolized, as far as the ELF's symbols and DWARF say.
    pub fn frame(&mut self, pc: u64) -> Frame {
        match &mut self.symbols {
            Some(symbols) => symbols.frame(pc, false),
            None => Frame {
                pc,
                ..Frame::default()
            },
        }
    }

    /// The place of guest `pc` (`function (file:line)`, `pc 0x...`
    /// without symbols: [`crate::symbolize::place`]).
    pub fn place(&mut self, pc: u64) -> String {
        self.frame(pc).place()
    }

    /// Where a crash at `pc` (of the running thread) happened: the
    /// innermost frame of its stack with a source line (the program's own
    /// code; the C library's has none), else the pc's own place; and the
    /// whole stack, innermost first.
    fn crash_place(&mut self, pc: u64) -> (String, String) {
        let pcs = match &self.unwinder {
            Some(unwinder) => unwinder.stack(&self.machine.memory, pc, &self.machine.cpu.x),
            None => vec![pc],
        };
        let frames: Vec<Frame> = pcs
            .iter()
            .enumerate()
            .map(|(i, &pc)| match &mut self.symbols {
                Some(symbols) => symbols.frame(pc, i > 0),
                None => Frame {
                    pc,
                    ..Frame::default()
                },
            })
            .collect();
        let stack = frames
            .iter()
            .map(|f| f.function.clone().unwrap_or_else(|| format!("{:#x}", f.pc)))
            .collect::<Vec<_>>()
            .join(" <- ");
        let place = match frames.iter().find(|f| f.location().is_some()) {
            Some(frame) => frame.place(),
            None => self.place(pc),
        };
        (place, stack)
    }

    /// The end of a run that exited with `exit`.
    pub(super) fn end(&mut self, exit: Exit) -> End {
        match exit {
            Exit::Status(0) => End::Ok,
            Exit::Status(code) => End::crash(
                "exit",
                format!("the program exited with status {code}"),
                None,
            ),
            Exit::OutOfInstructions => End::Timeout,
            Exit::SetupComplete => unreachable!("only setup stops at dst_setup_complete"),
            Exit::Crashed => unreachable!("a crashed run restarts"),
            Exit::Idle { .. } => unreachable!("only a node of a cluster idles"),
            Exit::Signal {
                signal,
                pc,
                address,
            } => {
                let (place, stack) = self.crash_place(pc);
                End::crash(
                    crate::symbolize::signal_name(signal),
                    format!(
                        "signal {signal} in {place} (pc {pc:#x}, address {address:#x}); stack: {stack}"
                    ),
                    Some(place),
                )
            }
            Exit::Unsupported { number, what } => {
                let call = format!("{} ({number})", syscall_name(number));
                let message = match what {
                    Some(what) => format!("{call}: the emulator does not implement {what}"),
                    None => format!("system call {call} is not implemented by the emulator"),
                };
                End::crash("unsupported system call", message, Some(call))
            }
            Exit::Deadlock { waiting } => {
                let threads: Vec<serde_json::Value> = waiting
                    .iter()
                    .map(|&(tid, futex, pc)| {
                        serde_json::json!({
                            "thread": tid,
                            "futex": format!("{futex:#x}"),
                            "at": self.place(pc),
                        })
                    })
                    .collect();
                let details = serde_json::json!({ "threads": threads }).to_string();
                let site = &dst::catalog::BUILTIN[0];
                debug_assert!(site.message.contains("deadlock"));
                let recorder = &mut self.machine.recorder;
                if recorder.evaluate(0, site.kind, true, f64::NAN).report() {
                    recorder.report(0, true, Some(details));
                }
                End::Ok
            }
        }
    }

    /// After a run traced or recorded with events: its thread switches as
    /// schedule steps, its output and system calls as lifecycle events.
    fn record(&mut self) {
        let switches = std::mem::take(&mut self.machine.threads.switches);
        let tracing = self.machine.recorder.tracing_steps();
        for (i, switch) in switches.iter().enumerate().filter(|_| tracing) {
            let frame = self.frame(switch.pc);
            let function = frame.function.as_deref().unwrap_or("?");
            let mut op = format!("{} @{} in {function}", switch.why.name(), switch.at);
            if switch.preempted {
                let stopped = self.place(switch.from_pc);
                op = format!("{op} (thread {} stopped in {stopped})", switch.from);
            }
            self.machine.recorder.step(Step {
                step: i as u64 + 1,
                thread: switch.to,
                op,
                file: frame.file.unwrap_or_else(|| format!("pc {:#x}", switch.pc)),
                line: frame.line.unwrap_or(0),
                column: 0,
                preempted: switch.preempted.then_some(switch.from),
            });
        }
        self.machine.threads.switches = switches;
        let calls: Vec<(String, i64)> = self
            .machine
            .calls
            .iter()
            .map(|&(n, r)| (syscall_name(n).to_string(), r))
            .collect();
        let machine = &mut self.machine;
        crate::guest::record_output(
            &mut machine.recorder,
            Some(&calls),
            &machine.kernel.stdout,
            &machine.kernel.stderr,
        );
    }

    /// The program starts again from its snapshot after the world crashed
    /// it, on what its file system kept (the run's recorder, clock, output
    /// and calls go on).
    pub(super) fn restart(&mut self) {
        let mut restarted = self.loaded.clone();
        restarted.restart_from(&mut self.machine);
        self.machine = restarted;
    }

    /// The machine as the last run left it (its output, its calls).
    pub fn machine(&self) -> &Machine {
        &self.machine
    }
}

impl Executor for Emulator {
    fn execute(&mut self, input: &[u8]) -> End {
        self.region.view().reset(input, self.flags);
        self.machine.clone_from(&self.loaded);
        // SAFETY: the cells are owned by `self` and written only here,
        // between the explorer's reads.
        let edges = unsafe {
            std::slice::from_raw_parts_mut(UnsafeCell::raw_get(self.edges.as_ptr()), EDGES)
        };
        edges.fill(0);
        let mut exit = self.machine.run_with(self.budget, edges);
        let mut used = 0;
        while exit == Exit::Crashed {
            // The node restarts from the program's start, on what its
            // file system kept; the run goes on with its budget's rest.
            used += self.machine.cpu.retired - self.loaded.cpu.retired;
            self.restart();
            exit = self
                .machine
                .run_with(self.budget.saturating_sub(used), edges);
        }
        let end = self.end(exit);
        if self.flags & (FLAG_EVENTS | FLAG_TRACE_SITES) != 0 {
            self.record();
        }
        end
    }

    fn region(&self) -> RegionRef<'_> {
        self.region.view()
    }

    fn catalog(&self) -> &[SiteInfo] {
        &self.catalog
    }

    fn coverage(&mut self) -> Coverage<'_> {
        // SAFETY: boxed cells owned by `self`, never resized; written only
        // by runs.
        let edges = unsafe { Map::from_raw_parts(UnsafeCell::raw_get(self.edges.as_ptr()), EDGES) };
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

    /// Runs end by their instruction budget; this is only a backstop.
    fn timeout(&self) -> Option<Duration> {
        Some(self.backstop)
    }

    fn set_timeout(&mut self, timeout: Duration) {
        self.backstop = timeout;
    }
}
