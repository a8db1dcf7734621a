//! The emulator executor: unmodified static RISC-V Linux programs (RV64GC,
//! lp64d) on a deterministic software CPU.
//!
//! Why an interpreter of our own: the libraries that exist do not fit.
//! ckb-vm has no F or D (glibc's lp64d code uses both), rvemu runs RV64GC
//! but has no hooks for system calls or per-instruction preemption and is
//! unmaintained, unicorn is GPL, and libafl_qemu clones QEMU at build time.
//! What dst needs from the CPU is small and exact: decode, execute one
//! instruction, count instructions, stop at any of them.
//!
//! The parts: [`decode`] (RV64GC to a flat instruction; checked against
//! every instruction binutils disassembles in a static glibc program),
//! [`cpu`] (registers, a sparse paged memory, one instruction per step;
//! `ecall` and faults stop the step), [`machine`] (the ELF loaded with
//! `object`, Linux's initial stack and auxv, the program's setup up to
//! `main`, and the system calls a static glibc program makes, answered
//! deterministically), [`threads`] (`clone`, `futex`, and the scheduler:
//! which thread runs and when the running one is preempted are decisions)
//! `crate::guest` (dst.h's calls, which `sdk-c/guest/dst_riscv.c` makes
//! as `ecall`s of dst's own numbers) and [`unwind`] (a crash's stack, from
//! the ELF's `.eh_frame`, to place it in the program's own code).
//!
//! [`executor`] puts it behind the one executor trait: the machine at
//! `main` (or at `dst_setup_complete`) is the snapshot (pages shared until
//! written, so a restore copies no bytes), `getrandom`, the clock and the
//! schedule are decisions written by the machine's recorder of the run
//! protocol (`dst::protocol`) into the executor's region, taken branches and jumps are edges, and the instruction budget
//! makes a spinning program a timeout that replays identically.
//!
//! [`cluster`] runs several programs as the nodes of one run, each an
//! [`executor::Emulator`] whose machine stops when all of its threads
//! wait, over a simulated network between the nodes' sockets, with one
//! virtual clock (a nanosecond per instruction) and the world's faults.

pub mod cluster;
pub mod cpu;
pub mod decode;
pub mod executor;
pub mod machine;
pub mod threads;
pub mod unwind;
