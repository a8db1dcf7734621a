//! Classic concurrency bugs, re-implemented from the descriptions of the
//! SCTBench suite (Thomson, Donaldson and Betts, "Concurrency testing using
//! controlled schedulers", 2016) with `dst::thread` and `dst::sync`. Each
//! program fails one property only under some thread schedules; the
//! explorer finds the schedule, and replay shows it step by step.
//!
//! | program | bug |
//! |---|---|
//! | [`account`] | the checker runs after both the deposit and the withdrawal and finds the balance it did not expect |
//! | [`lazy01`] | a thread sees the total of two other threads' locked increments reach 3 |
//! | [`deadlock01`] | two threads take two locks in opposite orders |
//! | [`stack`] | a consumer pops once the producer has pushed, and can outpace it (underflow) |
//! | [`twostage`] | a reader sees the first stage of a two-lock update but not the second |
//! | [`reorder`] | a checker sees one of a setter's two writes without the other |
//! | [`wsq`] | the owner of a work-stealing queue and a thief both take its last item |
//!
//! The programs are written once (`src/programs.rs`), here on dst's
//! controlled types; `benches/schedules.rs` compiles the same text against
//! the `shuttle` crate to compare the two. The C ports are in `c/`.

/// `check!(condition, "property", details)`: an always-assertion.
macro_rules! check {
    ($cond:expr, $msg:literal, $details:expr) => {
        dst::assert_always!($cond, $msg, $details)
    };
}

use dst::sync::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};
use dst::sync::{Mutex, MutexGuard};
use dst::thread::{self, JoinHandle};

include!("programs.rs");
