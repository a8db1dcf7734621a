//! `dst-core`: what every level writes into a run's region, in one
//! `no_std` source without dependencies, so that the `dst` crate and the
//! KVM guest runtime run the same code.
//!
//! - [`hash`]: FNV-1a, the hash of site ids, fills (by words) and the
//!   trace;
//! - [`region`]: the region's layout (the header, site states, decision
//!   records, the protocol's constants) and [`region::Writer`], the writes
//!   of a run: a decision's record, its coverage and the trace hash, an
//!   assertion's evaluation into its site state;
//! - [`kind`]: what an assertion claims ([`kind::Kind`]) and when one
//!   evaluation fails it;
//! - [`decision`]: how a decision's bytes become its value, and how many
//!   a `below(n)` takes.
//!
//! The `dst` crate re-exports all of it (`dst::region`, `dst::hash`,
//! `dst::catalog::Kind`, `dst::decision::Value`) and adds what needs `std`
//! (regions it allocates or maps, the event log, the decision stream's
//! ChaCha8 tail). The KVM executor compiles this crate with `rustc` alone
//! for each guest it builds (`--cfg dst_guest`, which adds the C entry
//! points of `guest.rs` that `sdk-c/guest/dst_kvm.c` calls), so a guest
//! takes decisions and evaluates assertions with this code, and a change
//! of layout or rule cannot leave it behind. Written here rather than
//! taken from a crate because it *is* the protocol; it depends on nothing so that one
//! `rustc` call builds it.

#![no_std]

pub mod decision;
pub mod hash;
pub mod kind;
pub mod region;

#[cfg(dst_guest)]
mod guest;
