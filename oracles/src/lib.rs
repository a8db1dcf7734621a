//! `dst-oracles`: oracles that judge a whole run rather than one assertion.
//!
//! **Linearizability.** A simulation records what its clients asked and got
//! in a [`History`] (`invoke`, then `complete`, `unknown` or `fail`, with
//! the simulation's virtual times). [`History::check`] decides whether some
//! order of the operations, each taking effect at one instant between its
//! invocation and its return, is a legal run of a sequential [`Model`]:
//! - [`model`]: the [`Model`] trait (state, `step`, optional `partition`,
//!   descriptions) and [`PowerSet`] for nondeterministic models;
//! - [`models`]: a register, a key-value map, a FIFO queue and a set;
//! - [`check`]: partitions the history (P-compositionality), searches each
//!   partition with Wing and Gong's algorithm and Lowe's cache (as Porcupine
//!   does), within an optional [`Budget`];
//! - [`explain`]: shrinks a violation to a few operations that cannot be
//!   linearized together, printable and serializable;
//! - [`format`](mod@format): reads Jepsen logs, EDN (Porcupine's kv data) and JSON-lines
//!   histories; [`lincheck_file`] is the `cargo dst-fuzz lincheck` entry;
//! - [`assert_linearizable!`]: a violation as a dst assertion failure, with
//!   the explanation as its details.
//!
//! Operations with an unknown outcome (timeouts, crashes, Jepsen's `:info`)
//! may take effect at any time after their invocation, or never, with any
//! output, as in Jepsen and Porcupine.
//!
//! **Differential testing.** [`differential`] compares two implementations'
//! observations and reports the first that differs.
//!
//! ```
//! use dst_oracles::{History, assert_linearizable};
//! use dst_oracles::models::{Kv, KvInput, KvOutput};
//!
//! let mut history = History::new();
//! let put = history.invoke(1, KvInput::Put { key: "x".into(), value: "1".into() }, 0);
//! history.complete(put, KvOutput::Ok, 10);
//! let get = history.invoke(2, KvInput::Get { key: "x".into() }, 20);
//! history.complete(get, KvOutput::Value("".into()), 30); // stale: put had returned
//! let verdict = history.check(&Kv);
//! assert!(verdict.is_violation());
//! println!("{verdict}"); // the two operations, one per line
//! assert_linearizable!(verdict, "the store is linearizable"); // reports, does not panic
//! ```

pub mod check;
pub mod differential;
pub mod explain;
pub mod format;
pub mod history;
mod lincheck;
pub mod model;
pub mod models;
mod search;

#[doc(hidden)]
pub use dst;

pub use check::{Budget, CheckOptions, Verdict, check_operations};
pub use explain::{ExplainedOp, Explanation};
pub use format::{Format, ParseError};
pub use history::{History, OpId, Operation, Outcome};
pub use lincheck::{
    LincheckError, ModelName, Report, lincheck_file, lincheck_file_with, lincheck_str,
};
pub use model::{Model, NondeterministicModel, PowerSet, StateSet};

/// Something that holds a verdict: a [`Verdict`] or a [`Report`].
pub trait HasVerdict {
    fn verdict(&self) -> &Verdict;
}

impl HasVerdict for Verdict {
    fn verdict(&self) -> &Verdict {
        self
    }
}

impl HasVerdict for Report {
    fn verdict(&self) -> &Verdict {
        &self.verdict
    }
}

impl<T: HasVerdict + ?Sized> HasVerdict for &T {
    fn verdict(&self) -> &Verdict {
        (**self).verdict()
    }
}

#[doc(hidden)]
pub fn __verdict<T: HasVerdict + ?Sized>(value: &T) -> &Verdict {
    value.verdict()
}

/// Asserts (as `dst::assert_always!`) that a [`Verdict`] or [`Report`] is
/// not a violation; on a violation the details are the [`Explanation`] as
/// JSON. The message must be a literal, as for every dst assertion.
///
/// ```
/// # use dst_oracles::{History, assert_linearizable};
/// # use dst_oracles::models::Register;
/// let history = History::new();
/// assert_linearizable!(history.check(&Register::default()), "the register is linearizable");
/// ```
#[macro_export]
macro_rules! assert_linearizable {
    ($verdict:expr, $msg:literal $(,)?) => {{
        let checked = &$verdict;
        let verdict: &$crate::Verdict = $crate::__verdict(checked);
        $crate::dst::assert_always!(verdict.is_ok(), $msg, &verdict.explanation());
    }};
}

static HASHER: ahash::RandomState = ahash::RandomState::with_seeds(
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
);

/// A fast hash with fixed keys, so runs are reproducible.
pub(crate) fn hash_of<T: std::hash::Hash + ?Sized>(value: &T) -> u64 {
    HASHER.hash_one(value)
}
