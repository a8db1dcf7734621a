//! Replay and the determinism check: run an input again and compare traces.

use dst::region::DecisionRecord;
use serde::{Deserialize, Serialize};

use crate::{Executor, RunRecord, Signature};

/// Where two runs of one input first differ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Divergence {
    /// Index of the first differing decision.
    pub index: u64,
    /// That decision in the first run (`None`: the run had ended, or the trace
    /// was truncated there).
    pub expected: Option<DecisionRecord>,
    /// That decision in the later run.
    pub found: Option<DecisionRecord>,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |d: &Option<DecisionRecord>| match d {
            Some(d) => format!(
                "{} = {} at site {:#010x}",
                dst::decision::Kind::from_u8(d.kind).map_or("?", |k| k.name()),
                d.value,
                d.site
            ),
            None => "no decision".to_string(),
        };
        write!(
            f,
            "decision #{}: first run took {}, replay took {}",
            self.index,
            show(&self.expected),
            show(&self.found)
        )
    }
}

/// The first decision where `b` differs from `a`, or `None` if their traces
/// are identical.
pub fn first_divergence(a: &RunRecord, b: &RunRecord) -> Option<Divergence> {
    if a.trace_hash == b.trace_hash && a.decision_count == b.decision_count {
        return None;
    }
    let same = |x: &DecisionRecord, y: &DecisionRecord| {
        x.kind == y.kind && x.site == y.site && x.value == y.value
    };
    let common = a
        .decisions
        .iter()
        .zip(&b.decisions)
        .take_while(|(x, y)| same(x, y))
        .count();
    Some(Divergence {
        index: common as u64,
        expected: a.decisions.get(common).copied(),
        found: b.decisions.get(common).copied(),
    })
}

/// The verdict of running one input several times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Determinism {
    /// Every run had the same trace and the same outcome.
    Stable { runs: u32 },
    /// Run `run` (1-based) differed from the first.
    Diverged {
        run: u32,
        divergence: Option<Divergence>,
        /// Set when the traces agree but the outcomes do not.
        outcome_changed: bool,
    },
}

/// Runs `input` `times` times (at least once) and checks that every run
/// reproduces the first: the same trace hash and the same outcome. Returns the
/// first run's record and the verdict.
pub fn check_determinism(
    runner: &mut (impl Executor + ?Sized),
    input: &[u8],
    times: u32,
) -> (RunRecord, Determinism) {
    let first = runner.run(input);
    for run in 2..=times.max(1) {
        let again = runner.run(input);
        let divergence = first_divergence(&first, &again);
        let outcome_changed = first.outcome != again.outcome;
        if divergence.is_some() || outcome_changed {
            return (
                first,
                Determinism::Diverged {
                    run,
                    divergence,
                    outcome_changed,
                },
            );
        }
    }
    (first, Determinism::Stable { runs: times.max(1) })
}

/// What replaying a failing input showed: how often the failure came back,
/// and whether the replays agreed with each other.
#[derive(Debug, Clone)]
pub struct Confirmation {
    /// The failure being confirmed: the one an explorer saw, or (when it saw
    /// none it could name) the first replay's.
    pub signature: Option<Signature>,
    /// The first replay that failed with `signature`, else the first replay.
    pub record: RunRecord,
    /// Replays that failed with `signature`.
    pub reproduced: u32,
    pub runs: u32,
    /// Every replay against the first: the same trace and outcome, or where
    /// they parted.
    pub verdict: Determinism,
}

impl Confirmation {
    /// Every replay failed the expected way and agreed with the others.
    pub fn is_stable(&self) -> bool {
        self.reproduced == self.runs && matches!(self.verdict, Determinism::Stable { .. })
    }
}

/// Replays `input` `times` times (at least once), counting the replays that
/// fail with `expected` (or, when `None`, with the first replay's
/// signature). Unlike [`check_determinism`], every replay is run, so a
/// failure that a busy machine or a flaky target hides on some replays is
/// still counted on the others.
pub fn confirm(
    runner: &mut (impl Executor + ?Sized),
    input: &[u8],
    expected: Option<&Signature>,
    times: u32,
) -> Confirmation {
    let runs = times.max(1);
    let first = runner.run(input);
    let signature = expected.cloned().or_else(|| first.signature());
    let matches = |record: &RunRecord| signature.is_some() && record.signature() == signature;
    let mut reproduced = u32::from(matches(&first));
    let mut witness = matches(&first).then(|| first.clone());
    let mut verdict = Determinism::Stable { runs };
    for run in 2..=runs {
        let again = runner.run(input);
        if matches(&again) {
            reproduced += 1;
            if witness.is_none() {
                witness = Some(again.clone());
            }
        }
        let divergence = first_divergence(&first, &again);
        let outcome_changed = first.outcome != again.outcome;
        if matches!(verdict, Determinism::Stable { .. })
            && (divergence.is_some() || outcome_changed)
        {
            verdict = Determinism::Diverged {
                run,
                divergence,
                outcome_changed,
            };
        }
    }
    debug_assert!(reproduced <= runs);
    debug_assert_eq!(witness.is_some(), reproduced > 0);
    Confirmation {
        signature,
        record: witness.unwrap_or(first),
        reproduced,
        runs,
        verdict,
    }
}
