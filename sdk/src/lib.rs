//! `dst`: the SDK that users put into their code for deterministic simulation
//! testing.
//!
//! Without features it is what user code calls, in four parts:
//! - **Assertions** (`assert_always!`, `assert_sometimes!`, ...): properties
//!   checked in the code itself. Each macro site registers itself in a
//!   link-time [`catalog`], so every property of a binary is known before any
//!   run, and a property that was never reached is reported as unfound.
//! - **Decisions** ([`random`], [`fault!`]): every nondeterministic choice the
//!   target makes. Under an explorer they come from the input bytes, so a run
//!   is a pure function of its input; see [`decision`] for the encoding.
//! - **The region** ([`region`]): the fixed `#[repr(C)]` memory layout through
//!   which the SDK reads decisions and writes outcomes, shared by every
//!   executor level. What a run writes into it (a decision's record,
//!   coverage and trace hash, an assertion's site state), the layout, the
//!   kinds and the value rules are the `dst-core` crate's (`no_std`, no
//!   dependencies; re-exported here), which the KVM guest runtime is
//!   compiled from too. [`protocol`]'s `Recorder` writes a run into one, a
//!   value held by the SDK for the region it attached ([`runtime`]) and by
//!   each guest executor for its own. Under the process executor the region
//!   is a shared-memory segment ([`shm`]) and a crash handler records fatal
//!   signals with their stack; in a WebAssembly module (`wasm32-wasip1`)
//!   the SDK reaches dst's wasm executor through the hooks of [`wasm`]
//!   instead. [`cmplog`] is the comparison log an explorer's input-to-state
//!   stage reads (and the sanitizer's callbacks that fill it).
//! - **Local mode**, below: the same binary run by itself.
//!
//! Each mode only some programs need is a feature, named for its module:
//! - `threads`: **controlled threads** (`thread`, `sync`), std's thread
//!   and synchronization API; under an explorer one thread runs at a time
//!   and which one runs next at each lock, atomic access, spawn or join is
//!   a decision (the scheduler is `sched`, shared with libdst's pthread
//!   functions). Deadlocks, livelocks and threads that outlive the run are
//!   the SDK's own properties ([`catalog::BUILTIN`], in every catalog so
//!   that site indices do not depend on features).
//! - `world`: **the world** (`world`), one model for every level of
//!   virtual time, the network, disks and the nemesis, taking its
//!   decisions through whichever level runs it (the executors' guests,
//!   `sim`).
//! - `sim`: **simulation** (`sim`), a cluster of nodes in one thread, on an
//!   async runtime over the world, every fault and task switch a decision.
//! - `forkserver`: a Rust binary explored as a separate process forks a
//!   child per run from a server started before `main`, or loops in
//!   [`run`] (persistent mode); see [`forkserver`], which without the
//!   feature keeps only the protocol's constants and the catalog answer
//!   (such a program runs once per input).
//! - `libfuzzer`: libFuzzer-style harnesses get their bytes as decisions
//!   and read libFuzzer's flags (`libfuzzer`; libdst's `main`,
//!   `dst_fuzz::fuzz_target!`).
//!
//! Ids and names that must be the same in every run and process (site ids,
//! fill decisions, corpus names, crash stacks) hash with [`hash`]'s FNV-1a
//! (a fill's a word at a time).
//!
//! Without an explorer the SDK runs in *local mode*: decisions come from
//! `DST_SEED` (or a fresh seed, printed once to stderr) or from the bytes of
//! `DST_INPUT`; failing assertions print one line to stderr (once per site);
//! `DST_OUTPUT=file.jsonl` records the catalog, each site's first pass and
//! first failure, and lifecycle events (and every decision with
//! `DST_TRACE=1`); `DST_ABORT_ON_FAILURE=1` aborts on the first failure.
//! Assertions never panic or abort otherwise. A passing assertion in local
//! mode without `DST_OUTPUT` costs one relaxed atomic load and a branch.
//!
//! ```
//! let balance: u64 = 100;
//! let withdrawal = dst::random::below(150);
//! dst::assert_sometimes!(withdrawal > balance, "a withdrawal exceeds the balance");
//! if dst::fault!("disk full") {
//!     return; // the explorer decides when this fires
//! }
//! let paid = withdrawal.min(balance);
//! dst::assert_always_less_than_or_equal_to!(paid, balance, "never pay more than the balance");
//! ```

pub mod catalog;
pub mod cmplog;
#[cfg(unix)]
mod crash;
pub mod decision;
pub mod forkserver;
#[cfg(target_os = "linux")]
pub mod futex;
pub use dst_core::hash;
#[cfg(feature = "libfuzzer")]
pub mod libfuzzer;
pub mod lifecycle;
pub mod protocol;
pub mod random;
pub mod region;
pub mod runtime;
#[cfg(feature = "threads")]
#[doc(hidden)]
pub mod sched;
pub mod shm;
#[cfg(feature = "sim")]
pub mod sim;
#[cfg(feature = "threads")]
pub mod sync;
#[cfg(feature = "threads")]
pub mod thread;
pub mod wasm;
#[cfg(feature = "world")]
pub mod world;

pub use forkserver::run;
pub use runtime::{attach, detach};

/// A number usable in the numeric assertions: converted to `f64` for guidance.
pub trait Number: Copy {
    fn to_f64(self) -> f64;
}

macro_rules! impl_number {
    ($($t:ty),*) => { $(impl Number for $t {
        #[inline]
        fn to_f64(self) -> f64 { self as f64 }
    })* };
}
impl_number!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64
);

#[doc(hidden)]
#[macro_export]
macro_rules! __details_opt {
    () => {
        ::core::option::Option::None
    };
    ($details:expr) => {
        $crate::runtime::__details($details)
    };
}

/// One evaluation of a boolean assertion site.
#[doc(hidden)]
#[macro_export]
macro_rules! __assert_bool {
    ($kind:ident, $cond:expr, $text:expr, $msg:literal, $($details:expr)?) => {{
        let condition: bool = $cond;
        let site = $crate::__site!($kind, $msg, $text);
        if !($crate::runtime::__quiet() && !$crate::catalog::Kind::$kind.fails_on(condition)) {
            $crate::runtime::__assert(site, condition, f64::NAN, || {
                $crate::__details_opt!($($details)?)
            });
        }
    }};
}

/// One evaluation of a numeric assertion site.
#[doc(hidden)]
#[macro_export]
macro_rules! __assert_cmp {
    ($kind:ident, $op:tt, $left:expr, $right:expr, $msg:literal, $($details:expr)?) => {{
        let (left, right) = ($left, $right);
        let condition: bool = left $op right;
        let site = $crate::__site!(
            $kind,
            $msg,
            concat!(stringify!($left), " ", stringify!($op), " ", stringify!($right))
        );
        if !($crate::runtime::__quiet() && !$crate::catalog::Kind::$kind.fails_on(condition)) {
            let distance = $crate::Number::to_f64(left) - $crate::Number::to_f64(right);
            let score = $crate::catalog::Kind::$kind.score(distance);
            $crate::runtime::__assert(site, condition, score, || {
                $crate::__cmp_details!(left, right, $($details)?)
            });
        }
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __cmp_details {
    ($left:ident, $right:ident,) => {
        $crate::runtime::__cmp_details(
            $crate::Number::to_f64($left),
            $crate::Number::to_f64($right),
        )
    };
    ($left:ident, $right:ident, $details:expr) => {
        $crate::runtime::__details($details)
    };
}

/// One evaluation of a boolean-guidance assertion site.
#[doc(hidden)]
#[macro_export]
macro_rules! __assert_named {
    ($kind:ident, $all:literal, { $($name:ident : $value:expr),+ $(,)? }, $msg:literal, $($details:expr)?) => {{
        let values: &[(&str, bool)] = &[$((stringify!($name), $value)),+];
        let held = values.iter().filter(|(_, v)| *v).count();
        let condition = if $all { held == values.len() } else { held > 0 };
        let site = $crate::__site!($kind, $msg, stringify!($($name),+));
        if !($crate::runtime::__quiet() && !$crate::catalog::Kind::$kind.fails_on(condition)) {
            let score = if $all { (values.len() - held) as f64 } else { held as f64 };
            $crate::runtime::__assert(site, condition, score, || {
                $crate::__named_details!(values, $($details)?)
            });
        }
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __named_details {
    ($values:ident,) => {
        $crate::runtime::__details(
            &$values
                .iter()
                .copied()
                .collect::<::std::collections::BTreeMap<&str, bool>>(),
        )
    };
    ($values:ident, $details:expr) => {
        $crate::runtime::__details($details)
    };
}

/// Asserts that `cond` is true every time it is evaluated, and that it is
/// evaluated at least once in a campaign.
#[macro_export]
macro_rules! assert_always {
    ($cond:expr, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_bool!(Always, $cond, stringify!($cond), $msg, $($details)?)
    };
}

/// Asserts that `cond` is true every time it is evaluated; never reaching it
/// is fine.
#[macro_export]
macro_rules! assert_always_or_unreachable {
    ($cond:expr, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_bool!(AlwaysOrUnreachable, $cond, stringify!($cond), $msg, $($details)?)
    };
}

/// Asserts that `cond` is true at least once in a campaign.
#[macro_export]
macro_rules! assert_sometimes {
    ($cond:expr, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_bool!(Sometimes, $cond, stringify!($cond), $msg, $($details)?)
    };
}

/// Asserts that this point is reached at least once in a campaign.
#[macro_export]
macro_rules! assert_reachable {
    ($msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_bool!(Reachable, true, "", $msg, $($details)?)
    };
}

/// Asserts that this point is never reached.
#[macro_export]
macro_rules! assert_unreachable {
    ($msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_bool!(Unreachable, true, "", $msg, $($details)?)
    };
}

/// Asserts `left > right` every time; records the closest `left - right` came to failing.
#[macro_export]
macro_rules! assert_always_greater_than {
    ($left:expr, $right:expr, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_cmp!(AlwaysGreaterThan, >, $left, $right, $msg, $($details)?)
    };
}

/// Asserts `left >= right` every time; records the closest `left - right` came to failing.
#[macro_export]
macro_rules! assert_always_greater_than_or_equal_to {
    ($left:expr, $right:expr, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_cmp!(AlwaysGreaterThanOrEqualTo, >=, $left, $right, $msg, $($details)?)
    };
}

/// Asserts `left < right` every time; records the closest `left - right` came to failing.
#[macro_export]
macro_rules! assert_always_less_than {
    ($left:expr, $right:expr, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_cmp!(AlwaysLessThan, <, $left, $right, $msg, $($details)?)
    };
}

/// Asserts `left <= right` every time; records the closest `left - right` came to failing.
#[macro_export]
macro_rules! assert_always_less_than_or_equal_to {
    ($left:expr, $right:expr, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_cmp!(AlwaysLessThanOrEqualTo, <=, $left, $right, $msg, $($details)?)
    };
}

/// Asserts `left > right` at least once; records the closest `left - right` came to holding.
#[macro_export]
macro_rules! assert_sometimes_greater_than {
    ($left:expr, $right:expr, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_cmp!(SometimesGreaterThan, >, $left, $right, $msg, $($details)?)
    };
}

/// Asserts `left >= right` at least once; records the closest `left - right` came to holding.
#[macro_export]
macro_rules! assert_sometimes_greater_than_or_equal_to {
    ($left:expr, $right:expr, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_cmp!(SometimesGreaterThanOrEqualTo, >=, $left, $right, $msg, $($details)?)
    };
}

/// Asserts `left < right` at least once; records the closest `left - right` came to holding.
#[macro_export]
macro_rules! assert_sometimes_less_than {
    ($left:expr, $right:expr, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_cmp!(SometimesLessThan, <, $left, $right, $msg, $($details)?)
    };
}

/// Asserts `left <= right` at least once; records the closest `left - right` came to holding.
#[macro_export]
macro_rules! assert_sometimes_less_than_or_equal_to {
    ($left:expr, $right:expr, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_cmp!(SometimesLessThanOrEqualTo, <=, $left, $right, $msg, $($details)?)
    };
}

/// Asserts that at least one of the named conditions holds every time:
/// `assert_always_some!({a: x, b: y}, "msg")`. Records how many held.
#[macro_export]
macro_rules! assert_always_some {
    ({ $($name:ident : $value:expr),+ $(,)? }, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_named!(AlwaysSome, false, { $($name: $value),+ }, $msg, $($details)?)
    };
}

/// Asserts that all the named conditions hold together at least once:
/// `assert_sometimes_all!({a: x, b: y}, "msg")`. Records how many held.
#[macro_export]
macro_rules! assert_sometimes_all {
    ({ $($name:ident : $value:expr),+ $(,)? }, $msg:literal $(, $details:expr)? $(,)?) => {
        $crate::__assert_named!(SometimesAll, true, { $($name: $value),+ }, $msg, $($details)?)
    };
}

/// A named fault-injection point: `if dst::fault!("disk full") { ... }`.
/// Nominally `false`; the explorer decides when it fires, and the name shows
/// up in traces and reports.
#[macro_export]
macro_rules! fault {
    ($name:literal) => {
        $crate::runtime::__fault($crate::__site!(Fault, $name, ""))
    };
}
