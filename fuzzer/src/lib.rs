//! `dst-fuzz`: the explorer. It treats every decision a target takes as
//! mutated input bytes and searches, coverage-guided, for runs that break a
//! property; then hands what it found to the kernel's finding pipeline
//! (`dst_kernel::finding`: replayed, shrunk, explained).
//!
//! How the parts fit:
//! - [`target!`] turns a closure into a target binary whose command line
//!   ([`cli`]) offers `fuzz`, `ci`, `replay`, `minimize`, `report` and
//!   `catalog`;
//!   the `cargo-dst-fuzz` binary ([`driver`]) builds targets (with sanitizer
//!   coverage on the user's crates) and calls those commands, or explores
//!   another program itself (`--cmd`). [`args`] defines the flags both share.
//! - [`explore`] wires LibAFL to any `dst_kernel::Executor`: a closure in
//!   this process (`dst_executors::InProcess`) or another program through
//!   its fork server (`dst_executors::Process`). `feedback` (crate-private)
//!   holds the observers, feedbacks and objective that read the region;
//!   `mutators` edits whole decisions.
//! - [`ci`] is a CI job over any executor (replay what is stored, then
//!   explore; SARIF and JUnit out).
//! - [`store`] keeps corpus, campaign and findings on disk with atomic
//!   writes; [`stats`] the campaign over time (also as AFL's `plot_data`
//!   and `fuzzer_stats`); [`report`] prints the property table and builds
//!   the document [`html`] renders as one self-contained page; [`exit`] is
//!   the one table of exit statuses.
//!
//! Only this crate names LibAFL types, and none of them is public.

pub mod args;
pub mod ci;
pub mod cli;
pub mod driver;
pub mod exit;
pub mod explore;
pub(crate) mod feedback;
pub mod html;
pub(crate) mod monitor;
pub(crate) mod mutators;
pub mod report;
pub mod stats;
pub mod store;

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
