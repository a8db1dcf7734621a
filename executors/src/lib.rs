//! `dst-executors`: run one input against a target at some level.
//!
//! Every level implements the kernel's [`Executor`] (its doc comment states
//! the protocol) over the same region layout and decision stream:
//! - [`inprocess`]: the target is a closure in this process (fastest). Panics
//!   are caught and classified as crashes; edge coverage comes from the
//!   binary's sanitizer counters ([`edges`]).
//! - [`fork`]: the same closure, run in a forked child per input over a
//!   shared-memory region, with a per-run timeout: for targets that crash the
//!   process or hang (the in-process executor's [`Executor::isolated`] form).
//! - [`process`]: another program (a C or C++ service linking libdst), run
//!   through its fork server (or one process per input) over a region in a
//!   named shared-memory segment; its catalog is read from its binary
//!   ([`elf`]), its crashes are symbolized from its DWARF ([`symbolize`]).
//! - [`wasm`]: a WebAssembly module in an embedded interpreter (wasmi),
//!   with WASI provided by dst, restored from a snapshot between runs.
//! - [`riscv`]: an unmodified static riscv64 Linux program on dst's own
//!   RV64GC interpreter, its system calls and thread schedule dst's: the
//!   interpreter is the front of [`linux`], the application kernel that
//!   answers the program's system calls; several such programs run as the
//!   nodes of a cluster over a simulated network (`riscv::cluster`).
//! - [`kvm`]: a freestanding x86-64 guest in a one-vCPU virtual machine
//!   built on `/dev/kvm`, its region in guest memory.
//!
//! The two guest levels answer dst.h's calls alike ([`guest`]) and read
//! their catalog from the ELF ([`elf`]). Every guest level's clock is the
//! world's (`dst::world::clock`), its readings decided through the guest's
//! recorder.

pub mod edges;
pub mod elf;
pub mod fork;
pub mod guest;
pub mod inprocess;
pub mod kvm;
pub mod linux;
pub mod process;
pub mod riscv;
pub mod symbolize;
pub mod wasm;

pub use dst_kernel::{Coverage, End, Executor, Map, RunRecord};
pub use fork::Forking;
pub use inprocess::InProcess;
pub use process::Process;
pub use wasm::Wasm;
