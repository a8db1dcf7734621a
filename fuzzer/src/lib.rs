//! `dst-fuzz`: the explorer. It treats every decision a target takes as
//! mutated input bytes and searches, coverage-guided, for runs that break a
//! property; then replays, shrinks and explains what it found.
//!
//! How the parts fit:
//! - [`target!`] turns a closure into a target binary whose command line
//!   ([`cli`]) offers `fuzz`, `replay`, `minimize`, `report` and `catalog`;
//!   the `cargo-dst-fuzz` binary builds targets (with sanitizer coverage on
//!   the user's crates) and calls those commands.
//! - [`explore`] wires LibAFL: the harness runs a [`subject::Subject`], a
//!   closure in this process (`dst_executors::InProcess`) or another
//!   program through its fork server (`dst_executors::Process`, for
//!   `cargo dst-fuzz run --cmd`); [`feedback`] holds the observers, feedbacks
//!   and objective that read the region; [`mutators`] edits whole decisions;
//!   [`coverage`] receives the edge counters.
//! - [`findings`] turns a failing input into a replayed, shrunk, explained
//!   finding; [`store`] keeps corpus, campaign and findings on disk with
//!   atomic writes; [`report`] prints the property table.
//!
//! Only this crate names LibAFL types.

pub mod cli;
pub mod coverage;
pub mod exit;
pub mod explore;
pub mod feedback;
pub mod findings;
pub mod monitor;
pub mod mutators;
pub mod report;
pub mod store;
pub mod subject;

/// Defines a target binary's `main` from a closure using the `dst` API:
///
/// ```no_run
/// dst_fuzz::target!(|| {
///     let n = dst::random::below(10);
///     dst::assert_always!(n < 10, "n stays in range");
/// });
/// ```
#[macro_export]
macro_rules! target {
    ($body:expr) => {
        fn main() {
            ::std::process::exit($crate::cli::run(::std::boxed::Box::new($body)));
        }
    };
}
