//! Virtual time, one clock for every level: the same epoch, the same
//! encoding of how a reading advances it, the same skew of a node's clock.
//!
//! - **Epoch**: a run starts at [`EPOCH_NS`] on the realtime clock
//!   (2024-01-01T00:00:00Z) and at zero on the monotonic one.
//! - **Readings** ([`step`]): at the levels where time passes as the
//!   program runs (WASI's `clock_time_get`, the emulator's `clock_gettime`
//!   and `gettimeofday`, the KVM guest's `RDTSC`) each reading moves time
//!   forward by a decided step: one byte, [`STEP_NS`] (1 us) below
//!   `0xF0`; at `0xF0` or more (1 in 16 on a random tail, as a fault) a
//!   jump of 1 to [`MAX_JUMP_S`] seconds, two bytes more. So a program
//!   reads the same times at each of them.
//! - **Events**: where the model schedules work itself (`dst::sim`), time
//!   does not pass while tasks run; it jumps to the next due event when
//!   none can.
//! - **Skew** ([`skew`]): a node's clock reads global time plus an offset
//!   drawn when the node starts (`sim: clock skew`, then the offset in
//!   microseconds, up to the configured bound either way).

use super::{Decide, Fault};

/// The realtime clock at the start of every run, at every level:
/// 2024-01-01T00:00:00Z, in nanoseconds since the Unix epoch.
pub const EPOCH_NS: u64 = 1_704_067_200 * 1_000_000_000;

/// The nominal advance of one reading.
pub const STEP_NS: u64 = 1_000;
/// The longest decided jump, in seconds.
pub const MAX_JUMP_S: u64 = 600;
/// A step byte at least this jumps.
const JUMP_AT: u64 = 0xF0;

/// The advance of one clock reading, decided at the sites `step` (one
/// byte) and, for a jump, `jump` (two bytes).
pub fn step(decide: &mut impl Decide, step: &'static str, jump: &'static str) -> u64 {
    let byte = decide.below(step, 256);
    if byte < JUMP_AT {
        return STEP_NS;
    }
    let seconds = decide.below(jump, MAX_JUMP_S);
    debug_assert!(seconds < MAX_JUMP_S);
    (1 + seconds) * 1_000_000_000
}

/// A node's clock skew in nanoseconds, at most `max_ns` either way (in
/// whole microseconds): nominally none.
pub fn skew(decide: &mut impl Decide, max_ns: u64) -> i64 {
    let max = max_ns / 1000;
    if max == 0 || !decide.fault(Fault::ClockSkew) {
        return 0;
    }
    let offset = (decide.below("sim: clock skew amount", 2 * max + 1) as i64 - max as i64) * 1000;
    debug_assert!(offset.unsigned_abs() <= max_ns);
    offset
}
