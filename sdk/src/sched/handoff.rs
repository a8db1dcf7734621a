//! The hand-off and the life of controlled threads: the baton passes by
//! park and unpark under the scheduler's lock; threads are spawned, started,
//! joined and finished here; an abandoned run's threads leave here.

use std::cell::Cell;
use std::time::{Duration, Instant};

use super::{
    ALIVE, ALIVE_CHANGED, Abandoned, BODY, Guard, ME, Op, Sched, Site, State, Thread, ThreadKey,
    UNWINDS, block, carrier, enter, lock, on_carrier, report, run_next, set_pending,
};
use crate::catalog::{DEADLOCK, OUTLIVES};
use crate::runtime;

/// Takes this thread out of an abandoned run: a Rust thread unwinds; a C
/// thread (which must not unwind through C frames) parks for good, the
/// process being about to end.
pub(super) fn abandon(guard: Guard) -> ! {
    drop(guard);
    if UNWINDS.with(Cell::get) {
        std::panic::resume_unwind(Box::new(Abandoned))
    }
    loop {
        std::thread::park();
    }
}

/// Ends the run after a deadlock or livelock found by this thread: a C
/// thread of a whole-process run ends the process (the finding is in the
/// region); others abandon the run.
pub(super) fn end_run(guard: Guard) -> ! {
    if !UNWINDS.with(Cell::get) && runtime::whole_process() {
        drop(guard);
        let code = i32::from(runtime::first_failure().is_some() && runtime::is_local());
        // SAFETY: `_exit` ends the process at once; nothing here needs
        // unwinding or flushing (the region is shared memory).
        unsafe { libc::_exit(code) }
    }
    abandon(guard)
}

/// Parks until the scheduler makes `me` current (or abandons the run).
pub(super) fn wait_turn(mut guard: Guard, me: usize) -> Guard {
    let epoch = ME.with(Cell::get).epoch;
    loop {
        match guard.as_ref() {
            Some(sched) if sched.epoch == epoch && !sched.abort => {
                if sched.current == me {
                    return guard;
                }
            }
            _ => abandon(guard),
        }
        drop(guard);
        std::thread::park();
        guard = lock();
    }
}

/// Registers a thread about to be spawned under control. `rust`: a Rust
/// thread, which unwinds out of an abandoned run; spawned on the carrier
/// it is a continuation ([`spawn_continuation`]), else an OS thread that
/// [`finish`] waits for (a C thread parks instead and is not waited for).
pub fn spawn_begin(site: Site, rust: bool) -> Option<ThreadKey> {
    let (mut guard, _me) = enter()?;
    let co = rust && carrier::AVAILABLE && on_carrier();
    let sched = Sched::of(&mut guard);
    let tid = sched.threads.len();
    if let Some(strategy) = sched.strategy.as_mut() {
        strategy.added(tid, site);
    }
    let mut thread = Thread::new(None, site);
    if co {
        thread.co = true;
        thread.os = sched.threads[0].os.clone();
    }
    sched.threads.push(thread);
    if rust && !co {
        *ALIVE.lock().unwrap_or_else(|p| p.into_inner()) += 1;
    }
    Some(ThreadKey {
        epoch: sched.epoch,
        tid,
        rust,
        co,
    })
}

/// Creates the continuation of `key` (from [`spawn_begin`], a
/// continuation), which runs `body` when first scheduled. `stack`: its
/// size (None: std's default).
///
/// # Safety
/// What `body` borrows must stay alive until the thread finished or the
/// run ended ([`finish`]), or [`teardown_scope`] removed it.
pub unsafe fn spawn_continuation<F: FnOnce()>(
    key: ThreadKey,
    stack: Option<usize>,
    body: F,
) -> std::io::Result<()> {
    debug_assert!(key.co, "spawned as a continuation");
    // SAFETY: passed on from the caller.
    unsafe { carrier::spawn(key, stack, body) }
}

/// Removes the continuations among `keys` that have not finished (a
/// scope unwinding before its threads ended): their stacks unwind now.
pub fn teardown_scope(keys: &[ThreadKey]) {
    let tids: Vec<usize> = keys.iter().filter(|k| k.co).map(|k| k.tid).collect();
    carrier::teardown_threads(&tids);
}

/// The OS thread of `key` could not be started.
pub fn spawn_failed(key: ThreadKey) {
    if key.rust {
        exited();
    }
    let mut guard = lock();
    if let Some(sched) = guard.as_mut().filter(|s| s.epoch == key.epoch) {
        sched.threads[key.tid].state = State::Finished;
    }
}

/// Decrements the live OS threads when a controlled thread ends, however
/// it ends.
pub struct Exit(ThreadKey);

impl Drop for Exit {
    fn drop(&mut self) {
        let key = self.0;
        if let Some(os) = retire(key) {
            os.unpark();
        }
        ME.with(|m| m.set(ThreadKey::NONE));
        if key.rust {
            exited();
        }
    }
}

/// Marks `key`'s thread finished and, if it was current, hands over to the
/// next one: returns the OS thread to wake (after the lock is released).
pub(super) fn retire(key: ThreadKey) -> Option<std::thread::Thread> {
    let mut wake = None;
    let mut guard = lock();
    if let Some(sched) = guard.as_mut().filter(|s| s.epoch == key.epoch && !s.abort) {
        sched.threads[key.tid].state = State::Finished;
        if !key.co {
            sched.threads[key.tid].os = None;
        }
        sched.wake(join_key(key.tid));
        if sched.current == key.tid {
            // Hand over to the next thread; no one waits for this one.
            let site = sched.threads[key.tid].site;
            let mut next = sched.pick(key.tid, site);
            if next.is_none() && sched.threads.iter().any(|t| t.state == State::Blocked) {
                let details = sched.describe();
                sched.abort_all();
                drop(guard);
                report(DEADLOCK, &details);
                guard = lock();
                if !UNWINDS.with(Cell::get) && runtime::whole_process() {
                    end_run(guard);
                }
                next = None;
            }
            if let (Some(next), Some(sched)) = (next, guard.as_mut()) {
                sched.current = next;
                let carried = |t: usize| t == 0 || sched.threads[t].co;
                if !(key.co && carried(next)) {
                    wake = sched.threads[next].os.clone();
                }
            }
        }
    }
    wake
}

fn exited() {
    let mut alive = ALIVE.lock().unwrap_or_else(|p| p.into_inner());
    debug_assert!(
        *alive > 0,
        "a controlled thread exited twice, or was never counted"
    );
    *alive = alive.saturating_sub(1);
    ALIVE_CHANGED.notify_all();
}

/// The start of a controlled thread: waits for its first turn. The
/// returned guard marks it finished when dropped.
pub fn thread_start(key: ThreadKey) -> Exit {
    ME.with(|m| m.set(key));
    UNWINDS.with(|u| u.set(key.rust));
    let exit = Exit(key);
    let mut guard = lock();
    if let Some(sched) = guard.as_mut().filter(|s| s.epoch == key.epoch) {
        sched.threads[key.tid].os = Some(std::thread::current());
    }
    drop(wait_turn(guard, key.tid));
    exit
}

pub(super) fn join_key(tid: usize) -> usize {
    usize::MAX - tid
}

/// Waits until `key`'s thread has finished (under control).
pub fn join(key: ThreadKey, site: Site) {
    let Some((mut guard, me)) = enter() else {
        return;
    };
    if Sched::of(&mut guard).epoch != key.epoch {
        return;
    }
    set_pending(&mut guard, me, Op::Join, join_key(key.tid), site);
    guard = run_next(guard, me);
    while Sched::of(&mut guard).threads[key.tid].state != State::Finished {
        guard = block(guard, me);
    }
}

/// Whether `key`'s thread has finished (true for threads of other runs).
pub fn is_finished(key: ThreadKey) -> bool {
    let guard = lock();
    match guard.as_ref() {
        Some(sched) if sched.epoch == key.epoch => sched.threads[key.tid].state == State::Finished,
        _ => true,
    }
}

/// Runs a target body, catching its panic, as an executor does: the body's
/// thread is the main thread of a controlled run (if the run is
/// controlled), and afterwards [`finish`] ends that run.
pub fn run_body(body: &mut dyn FnMut()) -> std::thread::Result<()> {
    BODY.with(|b| b.set(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    BODY.with(|b| b.set(false));
    finish(result)
}

/// Ends the controlled run whose main thread is the caller, after the
/// target body returned (`Ok`) or unwound: reports threads still alive,
/// abandons them and waits until they are gone. An [`Abandoned`] unwind
/// becomes `Ok`: the run's finding is already recorded.
pub fn finish(result: std::thread::Result<()>) -> std::thread::Result<()> {
    let result = match result {
        Err(payload) if payload.is::<Abandoned>() => Ok(()),
        other => other,
    };
    let me = ME.with(Cell::get);
    if me.epoch == 0 {
        return result;
    }
    ME.with(|m| m.set(ThreadKey::NONE));
    let mut guard = lock();
    let Some(sched) = guard.as_mut().filter(|s| s.epoch == me.epoch) else {
        return result;
    };
    let outlived = (!sched.abort
        && result.is_ok()
        && sched.threads[1..]
            .iter()
            .any(|t| t.state != State::Finished))
    .then(|| sched.describe());
    sched.threads[me.tid].state = State::Finished;
    sched.abort_all();
    drop(guard);
    if let Some(details) = outlived {
        report(OUTLIVES, &details);
    }
    carrier::teardown();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut alive = ALIVE.lock().unwrap_or_else(|p| p.into_inner());
    while *alive > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            eprintln!(
                "dst: {} abandoned thread(s) did not exit within 5 s",
                *alive
            );
            *alive = 0;
            break;
        }
        alive = ALIVE_CHANGED
            .wait_timeout(alive, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    drop(alive);
    let mut guard = lock();
    if guard.as_ref().is_some_and(|s| s.epoch == me.epoch) {
        *guard = None;
    }
    result
}
