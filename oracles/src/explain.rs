//! Explaining a violation: a small set of operations of the failing
//! partition that cannot be linearized together.
//!
//! Shrinking has two phases, each keeping the set non-linearizable:
//! 1. The shortest failing prefix (binary search over the partition's
//!    events; operations still running at the cut count as unknown there,
//!    and a prefix that fails so does any longer one). The operations
//!    invoked in it, with their real outcomes, fail too.
//! 2. Delta debugging: drop chunks of operations, halving the chunk size
//!    down to one. A dropped operation is not forgotten but *relaxed*: it
//!    may take effect at any time, with any outcome, or never. A chunk is
//!    dropped only if the rest still fails with every dropped operation
//!    relaxed, so none of them could have explained the rest, at any time,
//!    in any way: a read is never shown without a write it could have seen.
//!    (Relaxed operations are cheap to search: one that changes nothing is
//!    skipped, and identical ones are tried in one order only.)
//!
//! Each check draws on one step budget, and is cut at a multiple of the
//! steps the failing search took; once the budget is spent, the explanation
//! is the smallest set shown so far and is marked as not minimal.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::history::Operation;
use crate::model::Model;
use crate::search::{Budget, Partition, view};
use crate::search::{Found, Meter, Op, search};

/// Why a history is not linearizable: the failing partition and a set of its
/// operations that cannot be linearized together, not even with help from
/// the partition's other operations invoked before the last of them
/// returned, each taking effect at any time with any outcome, or never.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explanation {
    /// The failing partition's key; `None` for an unpartitioned history.
    pub partition: Option<String>,
    /// How many operations the failing partition has.
    pub partition_size: usize,
    /// Whether shrinking finished within its budget: then every operation
    /// left is needed (with it relaxed too, the rest could be linearized).
    pub minimal: bool,
    /// The operations, in invocation order.
    pub operations: Vec<ExplainedOp>,
}

/// One operation of an explanation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainedOp {
    /// Its position in the checked history ([`crate::History::operations`]).
    pub index: usize,
    pub client: u64,
    /// Invocation time.
    pub call: u64,
    /// Return time; `None` for an unknown outcome.
    pub ret: Option<u64>,
    /// The operation, as [`Model::describe_input`] puts it.
    pub operation: String,
    /// The result, as [`Model::describe_output`] puts it, or `unknown`.
    pub result: String,
}

impl Explanation {
    fn new<M: Model>(
        model: &M,
        operations: &[Operation<M::Input, M::Output>],
        part: &Partition,
        indices: impl IntoIterator<Item = usize>,
        minimal: bool,
    ) -> Self {
        let mut ops: Vec<ExplainedOp> = indices
            .into_iter()
            .map(|index| {
                let op = &operations[index];
                ExplainedOp {
                    index,
                    client: op.client,
                    call: op.call,
                    ret: op.return_time(),
                    operation: model.describe_input(&op.input),
                    result: op
                        .output()
                        .map_or_else(|| "unknown".to_string(), |o| model.describe_output(o)),
                }
            })
            .collect();
        ops.sort_by_key(|op| (op.call, op.index));
        Self {
            partition: part.key.clone(),
            partition_size: part.ops.len(),
            minimal,
            operations: ops,
        }
    }

    /// The whole failing partition, not shrunk.
    pub(crate) fn unshrunk<M: Model>(
        model: &M,
        operations: &[Operation<M::Input, M::Output>],
        part: &Partition,
    ) -> Self {
        Self::new(model, operations, part, part.ops.iter().copied(), false)
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not linearizable: ")?;
        match &self.partition {
            Some(key) => write!(f, "partition {key:?}")?,
            None => write!(f, "the history")?,
        }
        write!(
            f,
            " ({} operations); these {} cannot be linearized, whatever the others did{}:",
            self.partition_size,
            self.operations.len(),
            if self.minimal {
                ""
            } else {
                " (the smallest set found within the budget)"
            }
        )?;
        let width = |s: String, w: usize| format!("{s:>w$}");
        write!(f, "\n  client    invoke    return  operation -> result")?;
        for op in &self.operations {
            let ret = op.ret.map_or_else(|| "-".to_string(), |t| t.to_string());
            write!(
                f,
                "\n  {} {} {}  {} -> {}",
                width(op.client.to_string(), 6),
                width(op.call.to_string(), 9),
                width(ret, 9),
                op.operation,
                op.result
            )?;
        }
        Ok(())
    }
}

/// Whether `ops` plus `relaxed` (in their weakest form) certainly fail.
fn fails<M: Model>(
    model: &M,
    ops: &[Op<'_, M::Input, M::Output>],
    relaxed: &[Op<'_, M::Input, M::Output>],
    meter: &mut Meter,
    per_check: u64,
    cut_short: &mut bool,
) -> bool {
    let all: Vec<_> = ops
        .iter()
        .copied()
        .chain(relaxed.iter().map(|op| op.relaxed()))
        .collect();
    let mut child = meter.child(per_check);
    let found = search(model, &all, &mut child);
    meter.absorb(&child);
    *cut_short |= found == Found::Exhausted;
    found == Found::Violation
}

/// Shrinks the failing partition `part` (whose search found a violation).
pub(crate) fn explain<M: Model>(
    model: &M,
    operations: &[Operation<M::Input, M::Output>],
    part: &Partition,
    budget: Option<Budget>,
    failing_steps: u64,
) -> Explanation {
    let mut meter = budget
        .unwrap_or_else(|| {
            Budget::steps(failing_steps.saturating_mul(32).saturating_add(1_000_000))
        })
        .meter();
    let per_check = failing_steps.saturating_mul(2).saturating_add(100_000);
    let mut cut_short = false;
    let full = view(operations, &part.ops);

    // Phase 1: the shortest failing prefix of events.
    let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(2 * full.len());
    for (i, op) in full.iter().enumerate() {
        events.push((op.call, false, i));
        events.push((op.ret, true, i));
    }
    events.sort_unstable();
    let prefix = |cut: usize| -> Vec<Op<'_, M::Input, M::Output>> {
        let mut returned = vec![false; full.len()];
        for &(_, is_return, i) in &events[..cut] {
            returned[i] |= is_return;
        }
        events[..cut]
            .iter()
            .filter(|&&(_, is_return, _)| !is_return)
            .map(|&(_, _, i)| {
                let op = full[i];
                if returned[i] {
                    op
                } else {
                    Op {
                        output: None,
                        ret: u64::MAX,
                        ..op
                    }
                }
            })
            .collect()
    };
    let (mut lo, mut hi) = (0, events.len());
    while hi - lo > 1 && !meter.exhausted() {
        let mid = lo + (hi - lo) / 2;
        let mut ignored = false;
        if fails(
            model,
            &prefix(mid),
            &[],
            &mut meter,
            per_check,
            &mut ignored,
        ) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let mut keep: Vec<usize> = events[..hi]
        .iter()
        .filter(|&&(_, is_return, _)| !is_return)
        .map(|&(_, _, i)| i)
        .collect();

    // Phase 2: drop chunks while the rest fails with every dropped
    // operation relaxed.
    let mut dropped: Vec<usize> = Vec::new();
    let mut chunk = (keep.len() / 2).max(1);
    'shrink: loop {
        let mut start = 0;
        while start < keep.len() {
            if meter.exhausted() {
                cut_short = true;
                break 'shrink;
            }
            let end = (start + chunk).min(keep.len());
            let rest: Vec<_> = keep[..start]
                .iter()
                .chain(&keep[end..])
                .map(|&i| full[i])
                .collect();
            let relaxed: Vec<_> = dropped
                .iter()
                .chain(&keep[start..end])
                .map(|&i| full[i])
                .collect();
            if !rest.is_empty()
                && fails(
                    model,
                    &rest,
                    &relaxed,
                    &mut meter,
                    per_check,
                    &mut cut_short,
                )
            {
                dropped.extend(keep.drain(start..end));
            } else {
                start = end;
            }
        }
        if chunk == 1 {
            break;
        }
        chunk = (chunk / 2).max(1);
    }
    Explanation::new(
        model,
        operations,
        part,
        keep.iter().map(|&i| part.ops[i]),
        !cut_short,
    )
}
