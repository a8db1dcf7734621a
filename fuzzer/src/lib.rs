//! `dst-fuzz`: the explorer. It treats every decision a target takes as
//! mutated input bytes and searches, coverage-guided, for runs that break a
//! property; then hands what it found to the kernel's finding pipeline
//! (`dst_kernel::finding`: replayed, shrunk, explained).
//!
//! How the parts fit:
//! - [`target!`] turns a closure into a target binary whose command line
//!   ([`cli`]) offers `fuzz`, `ci`, `replay`, `minimize`, `report` and
//!   `catalog`; [`fuzz_target!`] does the same for a cargo-fuzz harness
//!   (bytes, or an `arbitrary` type, drawn from decisions);
//!   the `cargo-dst-fuzz` binary ([`driver`]) builds targets (with sanitizer
//!   coverage on the user's crates) and calls those commands, or explores
//!   another program itself (`--cmd`). [`args`] defines the flags both share.
//! - [`explore`] wires LibAFL to any `dst_kernel::Executor`: a closure in
//!   this process (`dst_executors::InProcess`), another program through
//!   its fork server (`dst_executors::Process`), a wasm module
//!   (`dst_executors::Wasm`), a riscv64 program on the emulator or a KVM
//!   guest (`dst_executors::riscv`, `dst_executors::kvm`). Its folder
//!   also holds the observers, feedbacks and objective that read the
//!   region (`feedback`), the mutators that edit whole decisions
//!   (`mutators`) and the status lines (`monitor`), all crate-private.
//! - [`ci`] is a CI job over any executor (replay what is stored, then
//!   explore; SARIF and JUnit out), and [`ci::batch`] many of them. A
//!   campaign spans machines through the explorer's brokers (`--listen`,
//!   `--join`); [`merge`] joins the parts each machine kept.
//! - [`store`] keeps corpus, campaign and findings on disk with atomic
//!   writes; [`stats`] the campaign over time (also as AFL's `plot_data`
//!   and `fuzzer_stats`); [`report`] prints the property table and builds
//!   the document [`report::html`] renders as one self-contained page;
//!   [`exit`] is the one table of exit statuses.
//!
//! Each of `explore/`, `driver/`, `ci/` and `report/` is one part in its
//! own folder; the binaries (`cargo-dst-fuzz`, a target's `main`) are glue.
//!
//! Only this crate names LibAFL types, and none of them is public.

pub mod args;
pub mod ci;
pub mod cli;
pub mod driver;
pub mod exit;
pub mod explore;
pub mod merge;
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

/// `arbitrary`, for [`fuzz_target!`]'s typed form, as `libfuzzer_sys`
/// re-exports it (`use dst_fuzz::arbitrary::{Arbitrary, Unstructured}`;
/// `#[derive(Arbitrary)]` needs `arbitrary` with its `derive` feature as a
/// dependency of the fuzz crate).
pub use arbitrary;

/// The bytes of a [`fuzz_target!`] harness in this run: two decisions
/// (`dst::libfuzzer::input`), at most `dst::libfuzzer::max_len()` long.
#[doc(hidden)]
pub fn harness_bytes() -> Vec<u8> {
    dst::libfuzzer::input(dst::libfuzzer::max_len())
}

/// cargo-fuzz's `fuzz_target!` (libfuzzer-sys), so that a cargo-fuzz target
/// ports by changing its import (`use dst_fuzz::fuzz_target;`; the file
/// keeps its `#![no_main]`: the macro defines the C `main`, as libFuzzer
/// does). The harness's bytes are decisions (`dst::libfuzzer::input`), so
/// `dst::fault!`, `dst::random` and the assertions keep working beside
/// them, and the binary has [`target!`]'s command line.
///
/// ```ignore
/// #![no_main]
/// use dst_fuzz::fuzz_target;
///
/// fuzz_target!(|data: &[u8]| {
///     let _ = std::str::from_utf8(data);
/// });
/// ```
///
/// Also `|input: T|` for `T: arbitrary::Arbitrary`, built from the bytes
/// with `arbitrary_take_rest` (a run whose bytes make no `T` returns at
/// once, as under libFuzzer), and `init: EXPR,` before the closure, run once
/// before the first run.
#[macro_export]
macro_rules! fuzz_target {
    (|$data:ident: &[u8]| $body:block) => {
        $crate::fuzz_target!(init: (), |$data: &[u8]| $body);
    };
    (|$data:ident: $ty:ty| $body:block) => {
        $crate::fuzz_target!(init: (), |$data: $ty| $body);
    };
    (init: $init:expr, |$data:ident: &[u8]| $body:block) => {
        $crate::fuzz_target!(@main { $init; }, {
            let __dst_bytes = $crate::harness_bytes();
            let $data: &[u8] = &__dst_bytes;
            $body
        });
    };
    (init: $init:expr, |$data:ident: $ty:ty| $body:block) => {
        $crate::fuzz_target!(@main { $init; }, {
            let __dst_bytes = $crate::harness_bytes();
            let Ok($data) = <$ty as $crate::arbitrary::Arbitrary>::arbitrary_take_rest(
                $crate::arbitrary::Unstructured::new(&__dst_bytes),
            ) else {
                return;
            };
            $body
        });
    };
    (@main $init:block, $run:block) => {
        /// The C `main` (the file is `#![no_main]`, as cargo-fuzz targets are).
        #[unsafe(no_mangle)]
        pub extern "C" fn main(
            _argc: ::std::os::raw::c_int,
            _argv: *const *const ::std::os::raw::c_char,
        ) -> ::std::os::raw::c_int {
            $init
            #[allow(unreachable_code, clippy::diverging_sub_expression)]
            $crate::cli::run(::std::boxed::Box::new(|| $run))
        }
    };
}
