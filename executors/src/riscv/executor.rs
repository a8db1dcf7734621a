//! The emulator behind the one executor trait: a loaded program restored
//! before every run (a copy of the machine as loaded: its memory pages and
//! registers), the SDK attached to the executor's region so that
//! `getrandom` and the clock are decisions, a budget of instructions (out
//! of it is a timeout, the same on every replay), and edge coverage from
//! taken branches and jumps.

use std::cell::UnsafeCell;
use std::time::Duration;

use dst::catalog::SiteInfo;
use dst::region::{Layout, Region, RegionRef};
use dst_kernel::executor::region_map;
use dst_kernel::{Coverage, End, Executor, Map};

use super::machine::{Exit, Machine};

/// Instructions a run may execute unless told.
pub const DEFAULT_BUDGET: u64 = 100_000_000;
/// Bytes of the edge map.
const EDGES: usize = 1 << 16;

/// Runs a static riscv64 program; see the module docs.
pub struct Emulator {
    loaded: Machine,
    machine: Machine,
    region: Region,
    flags: u64,
    catalog: Vec<SiteInfo>,
    budget: u64,
    edges: Box<[UnsafeCell<u8>]>,
    backstop: Duration,
}

impl Emulator {
    /// The program in `bytes` with `args` (`argv[0]` first).
    pub fn new(bytes: &[u8], args: &[String], budget: u64) -> Result<Emulator, String> {
        let loaded = Machine::load(bytes, args, &[])?;
        Ok(Emulator {
            machine: loaded.clone(),
            loaded,
            region: Region::new(Layout {
                sites_capacity: 1,
                coverage_size: crate::inprocess::DECISION_COVERAGE,
                ..Layout::default()
            }),
            flags: 0,
            catalog: Vec::new(),
            budget,
            edges: (0..EDGES).map(|_| UnsafeCell::new(0)).collect(),
            backstop: Duration::from_secs(10),
        })
    }

    /// The machine as the last run left it (its output, its calls).
    pub fn machine(&self) -> &Machine {
        &self.machine
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        crate::inprocess::detach(&self.region);
    }
}

impl Executor for Emulator {
    fn execute(&mut self, input: &[u8]) -> End {
        let _attached = crate::inprocess::attach(&self.region, input, self.flags);
        self.machine.clone_from(&self.loaded);
        // SAFETY: the cells are owned by `self` and written only here,
        // between the explorer's reads.
        let edges = unsafe {
            std::slice::from_raw_parts_mut(UnsafeCell::raw_get(self.edges.as_ptr()), EDGES)
        };
        edges.fill(0);
        match self.machine.run_with(self.budget, edges) {
            Exit::Status(0) => End::Ok,
            Exit::Status(code) => End::crash(
                "exit",
                format!("the program exited with status {code}"),
                None,
            ),
            Exit::OutOfInstructions => End::Timeout,
            Exit::Signal {
                signal,
                pc,
                address,
            } => End::crash(
                signal_name(signal),
                format!("signal {signal} at pc {pc:#x} (address {address:#x})"),
                Some(format!("pc {pc:#x}")),
            ),
            Exit::Unsupported { number } => End::crash(
                "unsupported system call",
                format!(
                    "system call {} ({number}) is not implemented by the emulator",
                    super::machine::syscall_name(number)
                ),
                Some(format!(
                    "{} ({number})",
                    super::machine::syscall_name(number)
                )),
            ),
        }
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

fn signal_name(signal: i32) -> &'static str {
    match signal {
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        11 => "SIGSEGV",
        _ => "signal",
    }
}
