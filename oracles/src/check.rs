//! Checking a history: partition it, search each partition, explain the
//! first one that fails.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::explain::{Explanation, explain};
use crate::history::{History, Operation};
use crate::model::Model;
pub use crate::search::Budget;
use crate::search::{AnySearch, Found, Op, partitions, view};

/// How to check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    /// Check each partition of [`Model::partition`] on its own (default
    /// true). Without it the model's state must cover every partition.
    pub partition: bool,
    /// The budget of the check; exceeded, the verdict is
    /// [`Verdict::Unknown`]. Default: unlimited.
    pub budget: Budget,
    /// Whether to shrink a violation to a small explanation (default true).
    pub explain: bool,
    /// The budget of that shrinking; exceeded, the explanation is the
    /// smallest found so far, marked not minimal. `None` (the default):
    /// 32 times the steps the failing search took, plus 1,000,000. Each
    /// check while shrinking is also cut at twice those steps plus 100,000.
    pub explain_budget: Option<Budget>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            partition: true,
            budget: Budget::UNLIMITED,
            explain: true,
            explain_budget: None,
        }
    }
}

/// The result of a check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "verdict", content = "explanation")]
pub enum Verdict {
    Linearizable,
    /// Not linearizable: one partition has no linearization.
    Violation(Explanation),
    /// The budget ran out before either was shown.
    Unknown,
}

impl Verdict {
    pub fn is_linearizable(&self) -> bool {
        matches!(self, Verdict::Linearizable)
    }

    pub fn is_violation(&self) -> bool {
        matches!(self, Verdict::Violation(_))
    }

    /// True unless a violation was found: an exhausted budget
    /// ([`Verdict::Unknown`]) is not a failure.
    pub fn is_ok(&self) -> bool {
        !self.is_violation()
    }

    pub fn explanation(&self) -> Option<&Explanation> {
        match self {
            Verdict::Violation(explanation) => Some(explanation),
            _ => None,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Linearizable => write!(f, "linearizable"),
            Verdict::Violation(explanation) => write!(f, "{explanation}"),
            Verdict::Unknown => write!(f, "unknown: the budget ran out"),
        }
    }
}

/// Checks `operations` against `model`.
///
/// # Panics
/// If an operation returns before it is invoked.
pub fn check_operations<M: Model>(
    model: &M,
    operations: &[Operation<M::Input, M::Output>],
    options: &CheckOptions,
) -> Verdict {
    for (i, op) in operations.iter().enumerate() {
        if let Some(ret) = op.return_time() {
            assert!(
                ret >= op.call,
                "operation {i} returns at {ret}, before its invocation at {}",
                op.call
            );
        }
    }
    let mut meter = options.budget.meter();
    let parts = partitions(model, operations, options.partition);
    let views: Vec<Vec<Op<'_, M::Input, M::Output>>> = parts
        .iter()
        .map(|part| view(operations, &part.ops))
        .collect();
    // Partitions take turns with doubling slices of steps, so a violation in
    // a partition that is quick to refute is found even when another one
    // would take very long (Porcupine checks them in parallel for this).
    let mut open: Vec<(usize, AnySearch<'_, '_, M>)> = views
        .iter()
        .enumerate()
        .map(|(p, ops)| (p, AnySearch::new(model, ops)))
        .collect();
    let mut slice = 10_000u64;
    while !open.is_empty() {
        let mut still_open = Vec::with_capacity(open.len());
        for (p, mut search) in open {
            let mut turn = meter.child(slice);
            let found = search.run(&mut turn);
            meter.absorb(&turn);
            match found {
                Found::Linearizable => {}
                Found::Exhausted if meter.exhausted() => return Verdict::Unknown,
                Found::Exhausted => still_open.push((p, search)),
                Found::Violation => {
                    let part = &parts[p];
                    let explanation = if options.explain {
                        explain(
                            model,
                            operations,
                            part,
                            options.explain_budget,
                            search.steps(),
                        )
                    } else {
                        Explanation::unshrunk(model, operations, part)
                    };
                    return Verdict::Violation(explanation);
                }
            }
        }
        open = still_open;
        slice = slice.saturating_mul(2);
    }
    Verdict::Linearizable
}
/// Checking a history (here, beside the checker, so that histories do not
/// import it).
impl<I: Clone, O: Clone> History<I, O> {
    /// Checks the history against `model` with the default options (no
    /// budget, partitioned, explained).
    pub fn check<M: Model<Input = I, Output = O>>(&self, model: &M) -> Verdict {
        self.check_with(model, &CheckOptions::default())
    }

    /// Checks the history against `model`.
    pub fn check_with<M: Model<Input = I, Output = O>>(
        &self,
        model: &M,
        options: &CheckOptions,
    ) -> Verdict {
        check_operations(model, &self.operations(), options)
    }
}
