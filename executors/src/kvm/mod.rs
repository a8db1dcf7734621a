//! The KVM executor (issue 15, in progress): a freestanding x86-64 guest
//! on its own virtual CPU, reset from a snapshot for every run.
//!
//! [`vm`] is the virtual machine: long mode, the guest at CPL 3, exception
//! stubs at CPL 0, hypercalls and exceptions as port I/O exits.

pub mod build;
pub mod executor;
pub mod vm;
pub mod watchdog;
