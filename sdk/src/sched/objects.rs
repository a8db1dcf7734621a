//! The synchronization objects of controlled runs: mutexes, reader-writer
//! locks, condition variables and atomics, as the scheduler's state of each
//! (by address), and the scheduling points that operate on them. Which
//! release a lock acquisition followed and which write an atomic read saw
//! count as interleaving coverage.

use super::{Op, Sched, Site, State, block, enter, run_next, set_pending, site_key};
use crate::decision::{Kind, Value};
use crate::runtime;

#[derive(Default)]
pub(super) struct Object {
    /// Exclusive holder (mutex, write lock).
    pub(super) holder: Option<usize>,
    pub(super) readers: u32,
    /// Condvar waiters, oldest first.
    pub(super) waiters: Vec<usize>,
    /// The last write (atomics) or release (locks): thread and site.
    pub(super) last: Option<(usize, u64)>,
}

/// Acquires `obj` exclusively (`Op::Lock`) or shared (`Op::Read`), blocking
/// while it is taken. Returns whether the caller is under control.
pub fn acquire(obj: usize, op: Op, site: Site) -> bool {
    let Some((mut guard, me)) = enter() else {
        return false;
    };
    set_pending(&mut guard, me, op, obj, site);
    guard = run_next(guard, me);
    loop {
        let sched = Sched::of(&mut guard);
        let object = sched.objects.entry(obj).or_default();
        let free = object.holder.is_none() && (op == Op::Read || object.readers == 0);
        if free {
            take(object, me, op, site);
            return true;
        }
        guard = block(guard, me);
    }
}

fn take(object: &mut Object, me: usize, op: Op, site: Site) {
    if op == Op::Read {
        object.readers += 1;
    } else {
        object.holder = Some(me);
    }
    if let Some((tid, last)) = object.last {
        runtime::count_interleaving(last ^ u64::from(tid != me), site_key(site));
    }
}

/// Tries to acquire `obj` without blocking: `Some(taken)` under control.
pub fn try_acquire(obj: usize, op: Op, site: Site) -> Option<bool> {
    let (mut guard, me) = enter()?;
    set_pending(&mut guard, me, op, obj, site);
    guard = run_next(guard, me);
    let object = Sched::of(&mut guard).objects.entry(obj).or_default();
    let free = object.holder.is_none() && (op == Op::Read || object.readers == 0);
    if free {
        take(object, me, op, site);
    }
    Some(free)
}

/// Releases `obj` (`Op::Unlock` or `Op::ReadUnlock`), then a scheduling
/// point. Returns whether the caller is under control.
pub fn release(obj: usize, op: Op, site: Site) -> bool {
    let Some((mut guard, me)) = enter() else {
        return false;
    };
    let sched = Sched::of(&mut guard);
    release_held(sched, obj, op, me, site);
    set_pending(&mut guard, me, op, obj, site);
    drop(run_next(guard, me));
    true
}

/// Releases a reader-writer lock the caller holds either way (as
/// `pthread_rwlock_unlock`). Returns whether the caller is under control.
pub fn release_either(obj: usize, site: Site) -> bool {
    let Some((mut guard, me)) = enter() else {
        return false;
    };
    let sched = Sched::of(&mut guard);
    let writer = sched
        .objects
        .get(&obj)
        .is_some_and(|o| o.holder == Some(me));
    let op = if writer { Op::Unlock } else { Op::ReadUnlock };
    release_held(sched, obj, op, me, site);
    set_pending(&mut guard, me, op, obj, site);
    drop(run_next(guard, me));
    true
}

fn release_held(sched: &mut Sched, obj: usize, op: Op, me: usize, site: Site) {
    let object = sched.objects.entry(obj).or_default();
    if op == Op::ReadUnlock {
        // Saturating, not asserted: a C target may unlock an rwlock it does
        // not hold (its bug, which the run then shows, not the SDK's).
        object.readers = object.readers.saturating_sub(1);
    } else {
        object.holder = None;
    }
    object.last = Some((me, site_key(site)));
    sched.wake(obj);
}

/// Turns the caller's exclusive hold of `obj` into a shared one (a write
/// guard downgraded), with no other writer in between; readers blocked on
/// it may run. Returns whether the caller is under control.
pub fn downgrade(obj: usize, site: Site) -> bool {
    let Some((mut guard, me)) = enter() else {
        return false;
    };
    let sched = Sched::of(&mut guard);
    let object = sched.objects.entry(obj).or_default();
    debug_assert_eq!(object.holder, Some(me), "a downgrade holds the lock");
    object.holder = None;
    object.readers += 1;
    object.last = Some((me, site_key(site)));
    sched.wake(obj);
    set_pending(&mut guard, me, Op::Downgrade, obj, site);
    drop(run_next(guard, me));
    true
}

/// A condition variable wait: releases `mutex`, blocks on `cv` until
/// notified (or, if `timed`, until nothing else can run), then reacquires
/// `mutex`. `Some(timed_out)` under control. A spurious wakeup is a
/// decision (a fault-like byte at the wait's site: never on the nominal
/// input, one wait in 16 on a random tail), as POSIX and std allow it.
pub fn wait(cv: usize, mutex: usize, timed: bool, site: Site) -> Option<bool> {
    let (mut guard, me) = enter()?;
    let sched = Sched::of(&mut guard);
    release_held(sched, mutex, Op::Unlock, me, site);
    if spurious(site) {
        // Woken without a notify, once the others had a turn: programs
        // must survive it (their condition is checked in a loop).
        set_pending(&mut guard, me, Op::Yield, cv, site);
        drop(run_next(guard, me));
        acquire(mutex, Op::Lock, site);
        return Some(false);
    }
    sched.objects.entry(cv).or_default().waiters.push(me);
    let thread = &mut sched.threads[me];
    thread.timed = timed;
    thread.timed_out = false;
    set_pending(&mut guard, me, Op::Wait, cv, site);
    guard = block(guard, me);
    let sched = Sched::of(&mut guard);
    let timed_out = std::mem::take(&mut sched.threads[me].timed_out);
    sched.threads[me].timed = false;
    drop(guard);
    acquire(mutex, Op::Lock, site);
    Some(timed_out)
}

/// Wakes one (the oldest) or every waiter of `cv`, then a scheduling point.
/// Returns whether the caller is under control.
pub fn notify(cv: usize, all: bool, site: Site) -> bool {
    let Some((mut guard, me)) = enter() else {
        return false;
    };
    let sched = Sched::of(&mut guard);
    let object = sched.objects.entry(cv).or_default();
    let woken: Vec<usize> = if all {
        std::mem::take(&mut object.waiters)
    } else if object.waiters.is_empty() {
        Vec::new()
    } else {
        vec![object.waiters.remove(0)]
    };
    for t in woken {
        let thread = &mut sched.threads[t];
        thread.state = State::Runnable;
        thread.timed = false;
    }
    set_pending(&mut guard, me, Op::Notify, cv, site);
    drop(run_next(guard, me));
    true
}

/// A scheduling point before an atomic access; counts which write a read
/// observes. Returns whether the caller is under control.
pub fn access(obj: usize, op: Op, site: Site) -> bool {
    let Some((mut guard, me)) = enter() else {
        return false;
    };
    set_pending(&mut guard, me, op, obj, site);
    guard = run_next(guard, me);
    let object = Sched::of(&mut guard).objects.entry(obj).or_default();
    if op != Op::Store {
        let (tid, last) = object.last.unwrap_or((me, 0));
        runtime::count_interleaving(last ^ u64::from(tid != me), site_key(site) ^ 0xAAAA);
    }
    if op != Op::Load {
        object.last = Some((me, site_key(site)));
    }
    true
}

/// Whether this condition variable wait wakes spuriously (a decision).
fn spurious(site: Site) -> bool {
    let mut byte = [0u8; 1];
    runtime::decide(Kind::Fault, site.decision(), &mut byte, Value::FAULT) != 0
}
