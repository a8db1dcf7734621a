//! Controlled Rust threads as continuations on the run's own OS thread.
//!
//! A thread that [`crate::thread`] spawns from the *carrier* (the OS thread
//! of the run's thread 0, or one of its continuations) is a corosensei
//! coroutine: spawning takes a stack from a pool (no system call once the
//! pool holds one), a switch is a stack swap, and the run's leftover
//! threads are torn down by unwinding their stacks in place, not by OS
//! threads exiting. corosensei's switches are asymmetric, so thread 0 runs
//! the resume loop (`super::dispatch`): a continuation that hands over
//! suspends back to thread 0's stack, which resumes the next one.
//!
//! The table of continuations is local to the carrier (corosensei's
//! coroutines are not `Send`); the scheduler's shared state stays in
//! `SCHED`. What std keeps per OS thread and the SDK needs per controlled
//! thread (the scheduler's `ME`, `BODY`, `UNWINDS`, errno, and
//! [`crate::thread_local!`] values) is switched here: each continuation
//! restores its own after every suspension, thread 0 its own after every
//! resume. std's `thread_local!` stays per OS thread, so continuations
//! share it (documented in [`crate::thread`]).
//!
//! Stacks are `DefaultStack`s (mmap, committed as touched, one guard page
//! below), pooled by size; an overflow faults on the guard page: a crash
//! of the run.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::ThreadKey;

type Co = Coroutine<(), (), (), DefaultStack>;

/// Spawned Rust threads can be continuations on this target.
pub(super) const AVAILABLE: bool = true;

/// Stack size of a controlled thread without `Builder::stack_size`: std's
/// default (2 MiB), or `RUST_MIN_STACK` as std reads it. Only what a thread
/// touches is committed.
fn default_stack() -> usize {
    static SIZE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SIZE.get_or_init(|| {
        std::env::var("RUST_MIN_STACK")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2 << 20)
    })
}

/// Stacks kept for reuse (beyond these, finished threads' stacks are
/// unmapped).
const POOL: usize = 256;

struct Slot {
    /// None while it runs (the dispatcher holds it) and once it returned.
    co: Option<Co>,
    /// The stack's size as asked for (its pool key).
    size: usize,
    /// [`crate::thread_local!`] values, by key index.
    locals: Vec<Option<Box<dyn Any>>>,
}

#[derive(Default)]
struct Table {
    epoch: u64,
    slots: Vec<Option<Slot>>,
    pool: Vec<(usize, DefaultStack)>,
}

thread_local! {
    static TABLE: RefCell<Table> = RefCell::new(Table::default());
    /// The running continuation's yielder (null on thread 0's stack).
    static YIELDER: Cell<*const Yielder<(), ()>> = const { Cell::new(std::ptr::null()) };
    /// The running continuation's thread id (`usize::MAX`: none).
    static RUNNING: Cell<usize> = const { Cell::new(usize::MAX) };
    /// [`teardown`] is unwinding continuations.
    static TEARING: Cell<bool> = const { Cell::new(false) };
}

/// Whether the caller runs in a continuation.
pub(super) fn in_continuation() -> bool {
    RUNNING.get() != usize::MAX
}

fn errno() -> i32 {
    // SAFETY: `__errno_location` returns this OS thread's errno slot.
    unsafe { *libc::__errno_location() }
}

fn set_errno(value: i32) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = value }
}

/// Creates the continuation of `key`'s thread, to run `body` when first
/// resumed. `size`: its stack (None: the default).
///
/// # Safety
/// What `body` borrows must outlive the continuation: it must be resumed
/// to completion or torn down ([`teardown`], [`teardown_threads`]) before
/// the borrow ends. (`'static` bodies are always safe.)
pub(super) unsafe fn spawn<F: FnOnce()>(
    key: ThreadKey,
    size: Option<usize>,
    body: F,
) -> io::Result<()> {
    if TABLE.with_borrow(|t| t.epoch != key.epoch && t.slots.iter().any(Option::is_some)) {
        teardown(); // a run that ended without `finish`
    }
    let size = size.unwrap_or_else(default_stack);
    let stack = match TABLE.with_borrow_mut(|t| {
        let i = t.pool.iter().position(|(s, _)| *s == size)?;
        Some(t.pool.swap_remove(i).1)
    }) {
        Some(stack) => stack,
        None => DefaultStack::new(size)?,
    };
    let entry = move |yielder: &Yielder<(), ()>, ()| {
        YIELDER.set(yielder);
        RUNNING.set(key.tid);
        super::set_context(key);
        let caught = catch_unwind(AssertUnwindSafe(body));
        if let Err(payload) = caught {
            if TEARING.get() {
                resume_unwind(payload); // corosensei's own unwind: let it through
            }
            // The body stores its result itself; an unwind here is the run
            // being abandoned, or a panic in the SDK's wrapper.
            drop(payload);
        }
        // Thread-local values are dropped by their own thread, as std does.
        let locals = TABLE.with_borrow_mut(|t| {
            t.slots
                .get_mut(key.tid)
                .and_then(Option::as_mut)
                .map(|s| std::mem::take(&mut s.locals))
        });
        drop(locals);
    };
    // SAFETY: the caller keeps what `body` borrows alive while the
    // continuation exists (see this function's contract).
    let co = unsafe { Co::with_stack_unchecked(stack, entry) };
    TABLE.with_borrow_mut(|t| {
        t.epoch = key.epoch;
        if t.slots.len() <= key.tid {
            t.slots.resize_with(key.tid + 1, || None);
        }
        debug_assert!(t.slots[key.tid].is_none(), "one continuation per thread");
        t.slots[key.tid] = Some(Slot {
            co: Some(co),
            size,
            locals: Vec::new(),
        });
    });
    Ok(())
}

/// Runs `tid`'s continuation until it suspends (false) or returns (true).
/// Called on thread 0's stack, without the scheduler's lock.
pub(super) fn resume(tid: usize) -> bool {
    debug_assert!(!in_continuation(), "only thread 0 resumes continuations");
    let Some(mut co) = TABLE.with_borrow_mut(|t| {
        t.slots
            .get_mut(tid)
            .and_then(Option::as_mut)
            .and_then(|s| s.co.take())
    }) else {
        debug_assert!(false, "thread {tid} has no continuation to resume");
        return true;
    };
    let context = super::context();
    let errno = errno();
    let result = co.resume(());
    YIELDER.set(std::ptr::null());
    RUNNING.set(usize::MAX);
    super::restore_context(context);
    set_errno(errno);
    match result {
        CoroutineResult::Yield(()) => {
            TABLE.with_borrow_mut(|t| {
                if let Some(slot) = t.slots.get_mut(tid).and_then(Option::as_mut) {
                    slot.co = Some(co);
                }
            });
            false
        }
        CoroutineResult::Return(()) => {
            let slot = TABLE.with_borrow_mut(|t| t.slots.get_mut(tid).and_then(Option::take));
            recycle(co, slot.as_ref().map_or(0, |s| s.size));
            drop(slot);
            true
        }
    }
}

fn recycle(co: Co, size: usize) {
    debug_assert!(
        co.done(),
        "only a finished continuation gives its stack back"
    );
    let stack = co.into_stack();
    TABLE.with_borrow_mut(|t| {
        if t.pool.len() < POOL {
            t.pool.push((size, stack));
        }
    });
}

/// Suspends the running continuation (it handed over); returns when thread
/// 0 resumes it, with its context restored.
pub(super) fn suspend() {
    let yielder = YIELDER.get();
    let tid = RUNNING.get();
    debug_assert!(!yielder.is_null(), "suspend runs in a continuation");
    let context = super::context();
    let errno = errno();
    // SAFETY: `yielder` is the running continuation's own (set when it
    // started and restored after each suspension), valid while it exists.
    unsafe { (*yielder).suspend(()) };
    YIELDER.set(yielder);
    RUNNING.set(tid);
    super::restore_context(context);
    set_errno(errno);
}

/// Unwinds and frees every continuation (the run is over). Their
/// destructors run with the scheduler out of the way (the SDK's operations
/// are not scheduling points while unwinding).
pub(super) fn teardown() {
    let slots = TABLE.with_borrow_mut(|t| std::mem::take(&mut t.slots));
    unwind(slots.into_iter().flatten());
}

/// Unwinds and frees the continuations of `tids` (a scope that unwinds
/// before its threads finished).
pub(super) fn teardown_threads(tids: &[usize]) {
    let slots: Vec<Slot> = TABLE.with_borrow_mut(|t| {
        tids.iter()
            .filter_map(|&tid| t.slots.get_mut(tid).and_then(Option::take))
            .collect()
    });
    unwind(slots.into_iter());
}

fn unwind(slots: impl Iterator<Item = Slot>) {
    let tearing = TEARING.replace(true);
    for mut slot in slots {
        if let Some(mut co) = slot.co.take() {
            co.force_unwind();
            recycle(co, slot.size);
        }
        drop(slot);
    }
    TEARING.set(tearing);
}

/// The running continuation's value of the thread-local with index
/// `index`, created by `init` on first use; None on thread 0's stack and
/// on OS threads (std's thread-locals serve those).
pub(crate) fn local<T: 'static>(index: usize, init: impl FnOnce() -> T) -> Option<*const T> {
    let tid = RUNNING.get();
    if tid == usize::MAX {
        return None;
    }
    let found = TABLE.with_borrow(|t| {
        let slot = t.slots.get(tid)?.as_ref()?;
        let value = slot.locals.get(index)?.as_ref()?;
        value.downcast_ref::<T>().map(|v| v as *const T)
    });
    if let Some(found) = found {
        return Some(found);
    }
    // Created outside the table's borrow: `init` may itself use
    // thread-locals (or the SDK).
    let value: Box<dyn Any> = Box::new(init());
    TABLE.with_borrow_mut(|t| {
        let slot = t.slots.get_mut(tid)?.as_mut()?;
        if slot.locals.len() <= index {
            slot.locals.resize_with(index + 1, || None);
        }
        let stored = slot.locals[index].insert(value);
        stored.downcast_ref::<T>().map(|v| v as *const T)
    })
}
