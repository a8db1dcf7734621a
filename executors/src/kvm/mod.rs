//! The KVM executor: a freestanding x86-64 guest on its own virtual CPU,
//! reset from a snapshot for every run.
//!
//! Why on kvm-ioctls and not QEMU or Firecracker: dst needs one vCPU, no
//! devices, and every exit; a VMM of its own is a few hundred lines on
//! top of the ioctls (`../shared/notes/kvm.md` has what these machines'
//! kvm-pvm costs).
//!
//! The parts: [`vm`] (the virtual machine: memory, page tables, GDT, IDT
//! and exception stubs, long mode at CPL 3, hypercalls and exceptions as
//! port I/O exits), [`watchdog`] (the timer that kicks a spinning guest
//! out), [`executor`] (the executor trait over it: load, snapshot, reset,
//! the region in guest memory, hypercalls answered by `crate::guest`) and
//! [`build`] (how a guest is compiled with its runtime).

pub mod build;
pub mod executor;
pub mod vm;
pub mod watchdog;
