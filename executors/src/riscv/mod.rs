//! The emulator executor (issue 14, in progress): unmodified static RISC-V
//! Linux programs (RV64GC, lp64d) on a deterministic software CPU.
//!
//! Why an interpreter of our own: the libraries that exist do not fit.
//! ckb-vm has no F or D (glibc's lp64d code uses both), rvemu runs RV64GC
//! but has no hooks for system calls or per-instruction preemption and is
//! unmaintained, unicorn is GPL, and libafl_qemu clones QEMU at build time.
//! What dst needs from the CPU is small and exact: decode, execute one
//! instruction, count instructions, stop at any of them.
//!
//! So far: [`decode`], checked against every instruction of a glibc static
//! binary as binutils disassembles it.

pub mod decode;
