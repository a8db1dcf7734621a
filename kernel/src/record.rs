//! What one run yields: the [`RunRecord`], read from the region after the run.

use std::fmt;

use dst::region::{DecisionRecord, Event, RegionRef, SITE_HIT};

use crate::End;
use serde::{Deserialize, Serialize};

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// No must-hold property failed and the target returned.
    Pass,
    /// A must-hold assertion failed (the first one, by time).
    AssertionFailure { site: u32, message: String },
    /// The target crashed: a panic, or a signal in a separate process.
    Crash {
        /// `panic`, or the signal's name.
        cause: String,
        message: String,
        /// `file:line:column` of the crash, when known.
        location: Option<String>,
    },
    /// The run exceeded its time budget.
    Timeout,
}

/// What identifies "the same failure" for deduplication and shrinking.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Signature {
    /// A property (by message) failed.
    Property {
        message: String,
    },
    /// A crash of this cause at this location (or with this message, when the
    /// location is unknown).
    Crash {
        cause: String,
        at: String,
    },
    Timeout,
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Signature::Property { message } => write!(f, "property \"{message}\" failed"),
            Signature::Crash { cause, at } => write!(f, "{cause} at {at}"),
            Signature::Timeout => write!(f, "timeout"),
        }
    }
}

impl Outcome {
    /// The failure signature, `None` for a passing run.
    pub fn signature(&self) -> Option<Signature> {
        match self {
            Outcome::Pass => None,
            Outcome::AssertionFailure { message, .. } => Some(Signature::Property {
                message: message.clone(),
            }),
            Outcome::Crash {
                cause,
                message,
                location,
            } => Some(Signature::Crash {
                cause: cause.clone(),
                at: location.clone().unwrap_or_else(|| message.clone()),
            }),
            Outcome::Timeout => Some(Signature::Timeout),
        }
    }
}

/// One site's state at the end of a run (only sites that were reached).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SiteRun {
    /// Catalog index.
    pub index: u32,
    /// `dst::region::SITE_*` bits.
    pub flags: u32,
    pub evaluations: u64,
    pub true_count: u64,
    /// Best guidance score of the run (lower is closer to flipping the
    /// property); `None` if the site has no guidance.
    pub guidance: Option<f64>,
}

/// Everything the kernel knows about one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub outcome: Outcome,
    /// Decision-stream bytes consumed (explicit and tail).
    pub consumed: u64,
    /// Decisions taken.
    pub decision_count: u64,
    /// The decision trace, in order (truncated to the region's capacity).
    pub decisions: Vec<DecisionRecord>,
    /// Hash over every decision's kind, site and value.
    pub trace_hash: u64,
    /// Reached sites, by catalog index.
    pub sites: Vec<SiteRun>,
    /// Nonzero coverage counters: (map index, count).
    pub coverage: Vec<(u32, u8)>,
    pub events: Vec<Event>,
    /// `dst::region::STATUS_*` bits.
    pub status: u64,
}

impl RunRecord {
    /// Reads the record of the run that just ended in `region` as `end`
    /// (what the executor saw: a crash, a timeout); an assertion failure is
    /// read from the region, and named from `catalog`.
    pub fn read(region: RegionRef<'_>, end: End, catalog: &[dst::catalog::SiteInfo]) -> RunRecord {
        RunRecord::read_with(region, end, true, catalog)
    }

    /// Like [`RunRecord::read`], without the decision trace, coverage and
    /// events: what the explorer needs after every execution, cheaply. The
    /// signature seen here is the one a full read sees.
    pub fn summary(
        region: RegionRef<'_>,
        end: End,
        catalog: &[dst::catalog::SiteInfo],
    ) -> RunRecord {
        RunRecord::read_with(region, end, false, catalog)
    }

    /// The record of a run whose region cannot be trusted (it killed the
    /// process that held it): its outcome alone.
    pub fn outcome_only(outcome: Outcome) -> RunRecord {
        RunRecord {
            outcome,
            consumed: 0,
            decision_count: 0,
            decisions: Vec::new(),
            trace_hash: 0,
            sites: Vec::new(),
            coverage: Vec::new(),
            events: Vec::new(),
            status: 0,
        }
    }

    fn read_with(
        region: RegionRef<'_>,
        end: End,
        full: bool,
        catalog: &[dst::catalog::SiteInfo],
    ) -> RunRecord {
        let h = region.header();
        let order = std::sync::atomic::Ordering::Acquire;
        let mut sites = Vec::new();
        for index in 0..region.sections().sites_capacity {
            let Some(state) = region.site(index) else {
                break;
            };
            let flags = state.flags.load(order);
            if flags & SITE_HIT == 0 {
                continue;
            }
            let guidance = f64::from_bits(state.guidance.load(order));
            sites.push(SiteRun {
                index: index as u32,
                flags,
                evaluations: state.evaluations.load(order),
                true_count: state.true_count.load(order),
                guidance: guidance.is_finite().then_some(guidance),
            });
        }
        let (map, len) = region.coverage_ptr();
        // SAFETY: `coverage_ptr` is the validated coverage section; the run is
        // over, so nothing writes to it while we read.
        let map = unsafe { std::slice::from_raw_parts(map, if full { len } else { 0 }) };
        let coverage = nonzero_counters(map);
        let failure = h.first_failure.load(order);
        let outcome = match end {
            End::Timeout => Outcome::Timeout,
            End::Crash(crash) => crash,
            End::Ok if failure != 0 => {
                let site = (failure - 1) as u32;
                let message = catalog
                    .get(site as usize)
                    .map(|s| s.message.clone())
                    .unwrap_or_else(|| format!("site #{site}"));
                Outcome::AssertionFailure { site, message }
            }
            End::Ok => Outcome::Pass,
        };
        debug_assert!(sites.windows(2).all(|w| w[0].index < w[1].index));
        debug_assert!(!full || coverage.len() <= region.sections().coverage_size);
        RunRecord {
            outcome,
            consumed: h.cursor.load(order),
            decision_count: h.decisions.load(order),
            decisions: if full {
                region.decisions().to_vec()
            } else {
                Vec::new()
            },
            trace_hash: h.trace_hash.load(order),
            sites,
            coverage,
            events: if full { region.events() } else { Vec::new() },
            status: h.status.load(order),
        }
    }

    pub fn signature(&self) -> Option<Signature> {
        self.outcome.signature()
    }
}

/// The nonzero counters of `map`, as (index, count), in index order. Most
/// of a map is zero: eight counters at a time are skipped while they are.
fn nonzero_counters(map: &[u8]) -> Vec<(u32, u8)> {
    let mut found = Vec::new();
    for (w, chunk) in map.chunks(8).enumerate() {
        if let Ok(word) = <[u8; 8]>::try_from(chunk)
            && u64::from_ne_bytes(word) == 0
        {
            continue;
        }
        for (i, &c) in chunk.iter().enumerate() {
            if c != 0 {
                found.push(((w * 8 + i) as u32, c));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::nonzero_counters;

    #[test]
    fn nonzero_counters_are_every_nonzero_byte_in_order() {
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 1000] {
            let map: Vec<u8> = (0..len)
                .map(|i: usize| {
                    if i % 5 == 3 || i + 1 == len {
                        (i % 251) as u8 + 1
                    } else {
                        0
                    }
                })
                .collect();
            let expected: Vec<(u32, u8)> = map
                .iter()
                .enumerate()
                .filter(|(_, c)| **c != 0)
                .map(|(i, c)| (i as u32, *c))
                .collect();
            assert_eq!(nonzero_counters(&map), expected, "{len} counters");
        }
        assert!(nonzero_counters(&[0; 4096]).is_empty());
    }
}
