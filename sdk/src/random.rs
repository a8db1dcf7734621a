//! Random values, drawn from the decision stream.
//!
//! Every function here is a decision: under an explorer its value comes from
//! the input, in local mode from `DST_SEED` or `DST_INPUT`. On the all-zero
//! input each returns its nominal value (0, `false`, the first element, zeros).
//! The call site (through `#[track_caller]`) names the decision in traces.

use std::convert::Infallible;
use std::panic::Location;

use crate::decision::{Kind, Value, below_width};
use crate::runtime::{DecisionSite, decide};

/// A decision site in C or C++ code (a site description, kept with the
/// others in [`crate::protocol`]).
pub use crate::protocol::ForeignSite;

/// [`u64()`] at a C or C++ call site.
pub fn u64_at(site: ForeignSite) -> u64 {
    u64_in(DecisionSite::Foreign(site))
}

/// [`below`] at a C or C++ call site.
pub fn below_at(n: u64, site: ForeignSite) -> u64 {
    below_as(Kind::Below, n, DecisionSite::Foreign(site))
}

/// [`bool()`] at a C or C++ call site.
pub fn bool_at(site: ForeignSite) -> bool {
    bool_in(DecisionSite::Foreign(site))
}

fn u64_in(site: DecisionSite) -> u64 {
    let mut bytes = [0u8; 8];
    decide(Kind::U64, site, &mut bytes, Value::Be)
}

pub(crate) fn below_as(kind: Kind, n: u64, site: DecisionSite) -> u64 {
    let width = below_width(n);
    if width == 0 {
        return 0;
    }
    let mut bytes = [0u8; 8];
    decide(kind, site, &mut bytes[..width], Value::Mod(n))
}

pub(crate) fn bool_in(site: DecisionSite) -> bool {
    let mut byte = [0u8; 1];
    decide(Kind::Bool, site, &mut byte, Value::Bit) != 0
}

/// A uniformly random `u64` (nominal 0).
#[track_caller]
pub fn u64() -> u64 {
    u64_in(DecisionSite::Caller(Location::caller()))
}

/// A value in `0..n` (nominal 0). `below(0)` and `below(1)` return 0 without
/// taking a decision.
#[track_caller]
pub fn below(n: u64) -> u64 {
    below_as(Kind::Below, n, DecisionSite::Caller(Location::caller()))
}

/// A random boolean (nominal `false`).
#[track_caller]
pub fn bool() -> bool {
    bool_in(DecisionSite::Caller(Location::caller()))
}

/// One element of `items` (nominal: the first); `None` if it is empty.
#[track_caller]
pub fn choose<T>(items: &[T]) -> Option<&T> {
    if items.is_empty() {
        return None;
    }
    let index = below_as(
        Kind::Choose,
        items.len() as u64,
        DecisionSite::Caller(Location::caller()),
    );
    items.get(index as usize)
}

/// Fills `buf` with random bytes (nominal: zeros).
#[track_caller]
pub fn fill(buf: &mut [u8]) {
    fill_as(Kind::Fill, buf, Location::caller());
}

fn fill_as(kind: Kind, buf: &mut [u8], caller: &'static Location<'static>) {
    decide(kind, DecisionSite::Caller(caller), buf, Value::Hash);
}

/// A random number generator whose every output is a decision, for code that
/// takes a `rand_core::Rng` (and so the deprecated alias `rand_core::RngCore`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Rng;

impl rand_core::TryRng for Rng {
    type Error = Infallible;

    #[track_caller]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let mut bytes = [0u8; 4];
        Ok(decide(
            Kind::RngU32,
            DecisionSite::Caller(Location::caller()),
            &mut bytes,
            Value::Be,
        ) as u32)
    }

    #[track_caller]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let mut bytes = [0u8; 8];
        Ok(decide(
            Kind::RngU64,
            DecisionSite::Caller(Location::caller()),
            &mut bytes,
            Value::Be,
        ))
    }

    #[track_caller]
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        fill_as(Kind::RngFill, dst, Location::caller());
        Ok(())
    }
}
