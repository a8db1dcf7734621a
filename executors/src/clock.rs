//! Virtual time as every level's clock advances it (WASI's clock_time_get,
//! the emulator's clock_gettime and gettimeofday, the KVM guest's RDTSC):
//! each reading moves time forward by a decided step, nominally 1 us; when
//! the step's byte is 0xF0 or more (1 in 16 on a random tail, as a fault),
//! a jump of 1 to 600 s. One function, so that the levels' clocks are one
//! clock: a program reads the same times at each.

use dst::decision::{Kind, Value};
use dst::protocol::SiteText;

use crate::guest::Recorder;

/// The realtime clock at the start of every run, at every level (WASI's
/// realtime clock, the emulator's `CLOCK_REALTIME` and `gettimeofday`):
/// 2024-01-01T00:00:00Z; monotonic clocks read zero then.
pub const EPOCH_NS: u64 = 1_704_067_200 * 1_000_000_000;

/// The nominal advance of one reading.
pub const STEP_NS: u64 = 1_000;
/// The longest decided jump, in seconds.
pub const MAX_JUMP_S: u64 = 600;
/// A step byte at least this jumps.
const JUMP_AT: u64 = 0xF0;

/// The advance of one clock reading, decided through `recorder` at the
/// sites `step` (one byte) and, for a jump, `jump` (two bytes).
pub fn step(recorder: &mut Recorder, step: &str, jump: &str) -> u64 {
    let byte = recorder.decide_at(
        Kind::Below,
        SiteText::named(step),
        &mut [0],
        Value::Mod(256),
    );
    if byte < JUMP_AT {
        return STEP_NS;
    }
    let seconds = recorder.decide_at(
        Kind::Below,
        SiteText::named(jump),
        &mut [0; 2],
        Value::Mod(MAX_JUMP_S),
    );
    (1 + seconds) * 1_000_000_000
}
