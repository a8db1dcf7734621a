//! `dst-kernel`: the seed-to-run contract, the same at every executor level.
//!
//! A run is a pure function of (target, input bytes): the target's SDK reads
//! every decision from the input (see [`dst::decision`] for the encoding).
//! Every level runs targets behind one trait, [`Executor`] (its doc comment
//! states the protocol: [`End`] of run, the run's region, its coverage
//! maps). From there:
//! - [`RunRecord`] (in `record`) is what one run yields: outcome, decisions
//!   consumed, the decision trace, coverage, assertion state, trace hash.
//! - [`replay`] reruns an input and names the first divergent decision: the
//!   determinism check that catches a target reading the clock; [`confirm`]
//!   counts how often a failure comes back.
//! - [`shrink()`] finds a shortlex-minimal input with the same failure
//!   [`Signature`], and [`bisect_prefix`] the shortest failing prefix under
//!   the nominal tail.
//! - [`finding`] is the pipeline from a failing input to a finding folder
//!   (confirm, shrink, bisect, explain, write), over any executor.
//! - [`campaign`] keeps what a campaign learned (corpus, per-property state,
//!   coverage), serializable so that a campaign stops and resumes.
//!
//! Executors live in `dst-executors`; the explorer (LibAFL) in `dst-fuzz`.
//! Nothing here names LibAFL.

pub mod campaign;
pub mod executor;
pub mod finding;
pub mod record;
pub mod replay;
pub mod shrink;

pub use campaign::{Campaign, Novelty, Property, Status};
pub use executor::{Coverage, End, Executor, Map, StandIn};
pub use record::{Outcome, RunRecord, Signature, SiteRun};
pub use replay::{
    Confirmation, Determinism, Divergence, check_determinism, confirm, first_divergence,
};
pub use shrink::{Shrunk, bisect_prefix, normalize, shortlex_less, shrink};

/// Writes `bytes` to `path` atomically: a temporary file in the same folder,
/// synced, then renamed over `path`. A crash at any point leaves either the
/// old file or the new one, never a torn one.
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    write_replacing(path, bytes, true)
}

/// Writes `bytes` to `path` as [`write_atomic`] does but without the sync:
/// readers see the old file or the whole new one, and a machine crash may
/// lose it. For files a campaign can make again (corpus entries, which it
/// writes hundreds of a second at its start, where each sync cost a
/// millisecond).
pub fn write_unsynced(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    write_replacing(path, bytes, false)
}

fn write_replacing(path: &std::path::Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    use std::io::Write;
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("path has no file name"))?;
    let tmp = path.with_file_name(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        if sync {
            file.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
