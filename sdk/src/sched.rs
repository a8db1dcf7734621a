//! The scheduler of controlled runs: one thread runs at a time, and at every
//! scheduling point the next one comes from the decision stream.
//!
//! Threads are real OS threads (so thread-locals, stacks and debuggers work
//! as usual) that pass a baton: each waits, parked, until the scheduler
//! names it current. Every operation of [`crate::thread`] and
//! [`crate::sync`] calls in here first; outside a controlled run
//! (`runtime::control_key`) each call returns at once and the std types
//! do the work.
//!
//! A run's strategy is chosen by its first contested scheduling point (one
//! byte, 0 for the nominal run):
//! - *direct*: each contested point reads one `below(runnable)` decision, 0
//!   keeping the current thread, so a shortlex-minimal input has the fewest
//!   preemptions;
//! - *PCT* (probabilistic concurrency testing): random thread priorities and
//!   up to two priority change points, read once; the highest-priority
//!   runnable thread runs;
//! - *POS* (partial order sampling): random priorities, and after each step
//!   fresh ones for the thread that ran and the threads racing with it.
//!
//! A run ends in a finding when every live thread is blocked (deadlock),
//! when it exceeds the step bound (livelock or hang), or when a thread
//! outlives the target body; the scheduler then *abandons* the run's threads:
//! each unwinds with an [`Abandoned`] payload, which executors recognize.

use std::cell::Cell;
use std::collections::HashMap;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar as StdCondvar, Mutex as StdMutex, MutexGuard as StdGuard};
use std::time::{Duration, Instant};

use crate::catalog::{self, DEADLOCK, LIVELOCK, OUTLIVES};
use crate::decision::{Kind, be_value};
use crate::runtime::{self, DecisionSite};

/// Where a thread does an operation: a Rust call site (`#[track_caller]`)
/// or a C one (`__FILE__` and `__LINE__` from `dst.h`'s macros).
#[derive(Clone, Copy, Debug)]
pub enum Site {
    Rust(&'static Location<'static>),
    C(crate::random::ForeignSite),
}

/// The caller's site (through `#[track_caller]` chains).
#[track_caller]
pub fn here() -> Site {
    Site::Rust(Location::caller())
}

impl Site {
    fn file(self) -> &'static str {
        match self {
            Site::Rust(l) => l.file(),
            Site::C(s) => s.file(),
        }
    }

    fn line(self) -> u32 {
        match self {
            Site::Rust(l) => l.line(),
            Site::C(s) => s.line(),
        }
    }

    fn column(self) -> u32 {
        match self {
            Site::Rust(l) => l.column(),
            Site::C(_) => 0,
        }
    }

    fn decision(self) -> DecisionSite {
        match self {
            Site::Rust(l) => DecisionSite::Caller(l),
            Site::C(s) => DecisionSite::Foreign(s),
        }
    }

    /// A number identifying the site in interleaving coverage.
    fn key(self) -> u64 {
        match self {
            Site::Rust(l) => l as *const Location<'static> as usize as u64,
            Site::C(s) => u64::from(s.id()) << 20 ^ 0xC,
        }
    }
}

/// The payload with which threads of an abandoned run unwind. Executors
/// treat a target body that unwinds with it as a run that ended normally
/// (its finding, if any, is already recorded).
#[derive(Debug)]
pub struct Abandoned;

/// Scheduling points a run may take before it is reported as a livelock
/// (`DST_MAX_STEPS` overrides).
pub const DEFAULT_MAX_STEPS: u64 = 100_000;

/// What a thread is about to do at a scheduling point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Start,
    Spawn,
    Join,
    Yield,
    Sleep,
    Lock,
    Unlock,
    Read,
    ReadUnlock,
    Wait,
    Notify,
    Load,
    Store,
    Rmw,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Start => "start",
            Op::Spawn => "spawn",
            Op::Join => "join",
            Op::Yield => "yield",
            Op::Sleep => "sleep",
            Op::Lock => "lock",
            Op::Unlock => "unlock",
            Op::Read => "read lock",
            Op::ReadUnlock => "read unlock",
            Op::Wait => "wait",
            Op::Notify => "notify",
            Op::Load => "load",
            Op::Store => "store",
            Op::Rmw => "read-modify-write",
        }
    }

    /// Whether two operations on one object conflict when this is one of them.
    fn writes(self) -> bool {
        !matches!(
            self,
            Op::Load | Op::Read | Op::Start | Op::Yield | Op::Sleep
        )
    }

    fn yields(self) -> bool {
        matches!(self, Op::Yield | Op::Sleep)
    }
}

/// A thread of one controlled run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadKey {
    epoch: u64,
    tid: usize,
    rust: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Runnable,
    Blocked,
    Finished,
}

struct Thread {
    os: Option<std::thread::Thread>,
    state: State,
    op: Op,
    obj: usize,
    site: Site,
    priority: i64,
    /// In a timed wait: wakes (timed out) when nothing else can run.
    timed: bool,
    timed_out: bool,
}

#[derive(Default)]
struct Object {
    /// Exclusive holder (mutex, write lock).
    holder: Option<usize>,
    readers: u32,
    /// Condvar waiters, oldest first.
    waiters: Vec<usize>,
    /// The last write (atomics) or release (locks): thread and site.
    last: Option<(usize, u64)>,
}

#[derive(Clone, Copy, Debug)]
enum Strategy {
    Direct,
    Pct,
    Pos,
}

struct Sched {
    key: (usize, u64),
    epoch: u64,
    threads: Vec<Thread>,
    current: usize,
    steps: u64,
    max_steps: u64,
    strategy: Option<Strategy>,
    /// PCT: a contested step is a change point when its byte is at least
    /// this (0: never), and how many change points are left.
    change_threshold: u16,
    changes_left: u32,
    /// The next demoted priority (PCT change points, yields).
    low: i64,
    abort: bool,
    tracing: bool,
    objects: HashMap<usize, Object>,
    order: Vec<usize>,
}

static SCHED: StdMutex<Option<Sched>> = StdMutex::new(None);
static EPOCH: AtomicU64 = AtomicU64::new(0);
/// OS threads of controlled runs that have not exited yet.
static ALIVE: StdMutex<usize> = StdMutex::new(0);
static ALIVE_CHANGED: StdCondvar = StdCondvar::new();

thread_local! {
    /// This thread's key in the current controlled run (epoch 0: none).
    static ME: Cell<ThreadKey> = const { Cell::new(ThreadKey { epoch: 0, tid: 0, rust: false }) };
    /// This thread is running a target body ([`run_body`]).
    static BODY: Cell<bool> = const { Cell::new(false) };
    /// This thread leaves an abandoned run by unwinding (Rust threads and
    /// bodies); others (C threads) park for good instead.
    static UNWINDS: Cell<bool> = const { Cell::new(false) };
}

type Guard = StdGuard<'static, Option<Sched>>;

fn lock() -> Guard {
    SCHED.lock().unwrap_or_else(|p| p.into_inner())
}

fn site_key(site: Site) -> u64 {
    site.key()
}

fn max_steps() -> u64 {
    static MAX: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| {
        std::env::var("DST_MAX_STEPS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_MAX_STEPS)
    })
}

/// Records that the run reached one of the SDK's own unreachable
/// properties ([`catalog::BUILTIN`]), with each thread's state as details.
fn report(builtin: usize, details: &serde_json::Value) {
    runtime::__assert(&catalog::BUILTIN[builtin], true, f64::NAN, || {
        runtime::__details(details)
    });
}

/// Takes this thread out of an abandoned run: a Rust thread unwinds; a C
/// thread (which must not unwind through C frames) parks for good, the
/// process being about to end.
fn abandon(guard: Guard) -> ! {
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
fn end_run(guard: Guard) -> ! {
    if !UNWINDS.with(Cell::get) && runtime::whole_process() {
        drop(guard);
        let code = i32::from(runtime::first_failure().is_some() && runtime::is_local());
        // SAFETY: `_exit` ends the process at once; nothing here needs
        // unwinding or flushing (the region is shared memory).
        unsafe { libc::_exit(code) }
    }
    abandon(guard)
}

/// Whether this thread belongs to the current controlled run.
pub fn is_controlled() -> bool {
    ME.with(Cell::get).epoch != 0
}

/// Whether the caller is a thread of a controlled run that already has a
/// scheduler (some controlled operation happened in this run).
pub fn active() -> bool {
    let Some(key) = runtime::control_key() else {
        return false;
    };
    let me = ME.with(Cell::get);
    lock()
        .as_ref()
        .is_some_and(|s| s.key == key && s.epoch == me.epoch)
}

/// The scheduler, locked, and this thread's id in it, if this thread is
/// under control; the run's first controlled operation creates the
/// scheduler, with the calling thread as its main thread (0).
fn enter() -> Option<(Guard, usize)> {
    if std::thread::panicking() {
        return None;
    }
    let key = runtime::control_key()?;
    let mut guard = lock();
    let me = ME.with(Cell::get);
    if let Some(sched) = guard.as_ref()
        && sched.key == key
    {
        if me.epoch != sched.epoch {
            return None; // a thread this run does not control
        }
        if sched.abort {
            abandon(guard);
        }
        return Some((guard, me.tid));
    }
    if !BODY.with(Cell::get) && !runtime::whole_process() {
        return None; // not the target's thread: another user of the SDK
    }
    if let Some(old) = guard.as_mut() {
        old.abort_all();
    }
    let epoch = EPOCH.fetch_add(1, Ordering::Relaxed) + 1;
    runtime::set_status(crate::region::STATUS_CONTROLLED);
    let site = here();
    *guard = Some(Sched {
        key,
        epoch,
        threads: vec![Thread::new(Some(std::thread::current()), site)],
        current: 0,
        steps: 0,
        max_steps: max_steps(),
        strategy: None,
        change_threshold: 0,
        changes_left: 0,
        low: 0,
        abort: false,
        tracing: runtime::tracing_steps(),
        objects: HashMap::new(),
        order: Vec::new(),
    });
    ME.with(|m| {
        m.set(ThreadKey {
            epoch,
            tid: 0,
            rust: false,
        })
    });
    UNWINDS.with(|u| u.set(BODY.with(Cell::get)));
    Some((guard, 0))
}

impl Thread {
    fn new(os: Option<std::thread::Thread>, site: Site) -> Thread {
        Thread {
            os,
            state: State::Runnable,
            op: Op::Start,
            obj: 0,
            site,
            priority: 0,
            timed: false,
            timed_out: false,
        }
    }
}

impl Sched {
    fn of(guard: &mut Guard) -> &mut Sched {
        guard.as_mut().expect("entered")
    }

    fn abort_all(&mut self) {
        self.abort = true;
        for thread in &self.threads {
            if let Some(os) = &thread.os {
                os.unpark();
            }
        }
    }

    /// Makes runnable every thread blocked on `obj`.
    fn wake(&mut self, obj: usize) {
        for thread in &mut self.threads {
            if thread.state == State::Blocked && thread.obj == obj && !thread.timed {
                thread.state = State::Runnable;
            }
        }
    }

    fn priority_decision(site: Site) -> i64 {
        let mut bytes = [0u8; 2];
        runtime::decide(Kind::Priority, site.decision(), &mut bytes, be_value) as i64
    }

    /// Reads the run's strategy at its first contested point.
    fn strategy(&mut self, site: Site) -> Strategy {
        if let Some(strategy) = self.strategy {
            return strategy;
        }
        let mut byte = [0u8; 1];
        let value = runtime::decide(Kind::Strategy, site.decision(), &mut byte, |b| {
            u64::from(b[0])
        });
        let strategy = match value % 4 {
            0 => Strategy::Direct,
            1 => Strategy::Pct,
            _ => Strategy::Pos,
        };
        if let Strategy::Pct = strategy {
            // Up to depth - 1 change points, each contested step one with
            // probability 1/4 .. 1/32 (from a random tail).
            self.changes_left = 1 + ((value >> 2) % 3) as u32;
            self.change_threshold = 256 - (64 >> ((value >> 4) % 4));
        }
        if !matches!(strategy, Strategy::Direct) {
            for tid in 0..self.threads.len() {
                self.threads[tid].priority = 1_000_000 + Sched::priority_decision(site);
            }
        }
        self.strategy = Some(strategy);
        strategy
    }

    /// Picks the thread that runs next after `me`'s scheduling point; None
    /// when no thread can run.
    fn pick(&mut self, me: usize, site: Site) -> Option<usize> {
        let yielding = self.threads[me].op.yields();
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        let n = self.threads.len();
        let me_runnable = self.threads[me].state == State::Runnable;
        if me_runnable && !yielding {
            order.push(me);
        }
        for i in 1..n {
            let t = (me + i) % n;
            if self.threads[t].state == State::Runnable {
                order.push(t);
            }
        }
        if me_runnable && yielding {
            order.push(me);
        }
        let chosen = match order.len() {
            0 => self.time_out_a_wait(),
            1 => Some(order[0]),
            len => Some(match self.strategy(site) {
                Strategy::Direct => {
                    let k = crate::random::below_as(Kind::Schedule, len as u64, site.decision());
                    order[k as usize]
                }
                Strategy::Pct => {
                    if self.changes_left > 0 {
                        let mut byte = [0u8; 1];
                        let b = runtime::decide(Kind::Change, site.decision(), &mut byte, |b| {
                            u64::from(b[0])
                        });
                        if b >= u64::from(self.change_threshold) {
                            self.changes_left -= 1;
                            self.low -= 1;
                            let runs = self.highest(&order);
                            self.threads[runs].priority = self.low;
                        }
                    }
                    if yielding {
                        self.low -= 1;
                        self.threads[me].priority = self.low;
                    }
                    self.highest(&order)
                }
                Strategy::Pos => {
                    if yielding {
                        self.low -= 1;
                        self.threads[me].priority = self.low;
                    }
                    let chosen = self.highest(&order);
                    let (op, obj) = (self.threads[chosen].op, self.threads[chosen].obj);
                    self.threads[chosen].priority = Sched::priority_decision(site);
                    for &t in &order {
                        let other = &self.threads[t];
                        if t != chosen
                            && obj != 0
                            && other.obj == obj
                            && (op.writes() || other.op.writes())
                        {
                            self.threads[t].priority = Sched::priority_decision(site);
                        }
                    }
                    chosen
                }
            }),
        };
        self.order = order;
        chosen
    }

    fn highest(&self, order: &[usize]) -> usize {
        let mut best = order[0];
        for &t in &order[1..] {
            if self.threads[t].priority > self.threads[best].priority {
                best = t;
            }
        }
        best
    }

    /// Nothing can run: time passes, so the oldest timed wait times out.
    fn time_out_a_wait(&mut self) -> Option<usize> {
        let t = self
            .threads
            .iter()
            .position(|t| t.state == State::Blocked && t.timed)?;
        let obj = self.threads[t].obj;
        if let Some(object) = self.objects.get_mut(&obj) {
            object.waiters.retain(|&w| w != t);
        }
        let thread = &mut self.threads[t];
        thread.state = State::Runnable;
        thread.timed = false;
        thread.timed_out = true;
        Some(t)
    }

    /// Each live thread and what it waits for, for a report.
    fn describe(&self) -> serde_json::Value {
        let threads: Vec<serde_json::Value> = self
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| t.state != State::Finished)
            .map(|(i, t)| {
                serde_json::json!({
                    "thread": i,
                    "state": if t.state == State::Blocked { "blocked" } else { "runnable" },
                    "op": t.op.name(),
                    "at": format!("{}:{}:{}", t.site.file(), t.site.line(), t.site.column()),
                })
            })
            .collect();
        serde_json::json!({ "steps": self.steps, "threads": threads })
    }
}

/// Runs the scheduler at `me`'s scheduling point: picks the next thread
/// and, if it is another one, hands over and waits for `me`'s next turn.
fn run_next(mut guard: Guard, me: usize) -> Guard {
    let sched = Sched::of(&mut guard);
    sched.steps += 1;
    let site = sched.threads[me].site;
    if sched.steps > sched.max_steps {
        let details = sched.describe();
        sched.abort_all();
        drop(guard);
        report(LIVELOCK, &details);
        end_run(lock());
    }
    let Some(next) = sched.pick(me, site) else {
        let details = sched.describe();
        sched.abort_all();
        drop(guard);
        report(DEADLOCK, &details);
        end_run(lock());
    };
    let preempted = next != me && sched.threads[me].state == State::Runnable;
    if preempted {
        runtime::count_interleaving(site_key(site), site_key(sched.threads[next].site) ^ 0x5555);
    }
    if sched.tracing {
        let step = sched.steps;
        let thread = &sched.threads[next];
        runtime::step_event(crate::region::Step {
            step,
            thread: next as u32,
            op: thread.op.name().to_string(),
            file: thread.site.file().to_string(),
            line: thread.site.line(),
            column: thread.site.column(),
            preempted: preempted.then_some(me as u32),
        });
    }
    if next == me {
        return guard;
    }
    sched.current = next;
    // Wake the next thread only once the lock is free, so that it does not
    // wake into a held lock and bounce back.
    let wake = sched.threads[next].os.clone();
    drop(guard);
    if let Some(os) = wake {
        os.unpark();
    }
    wait_turn(lock(), me)
}

/// Parks until the scheduler makes `me` current (or abandons the run).
fn wait_turn(mut guard: Guard, me: usize) -> Guard {
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

/// A scheduling point before `op` on `obj` (0: none). Returns whether the
/// calling thread is under control.
pub fn point(op: Op, obj: usize, site: Site) -> bool {
    let Some((mut guard, me)) = enter() else {
        return false;
    };
    set_pending(&mut guard, me, op, obj, site);
    drop(run_next(guard, me));
    true
}

fn set_pending(guard: &mut Guard, me: usize, op: Op, obj: usize, site: Site) {
    let thread = &mut Sched::of(guard).threads[me];
    thread.op = op;
    thread.obj = obj;
    thread.site = site;
}

/// Blocks `me` (already marked with its operation) until woken and
/// scheduled again.
fn block(mut guard: Guard, me: usize) -> Guard {
    Sched::of(&mut guard).threads[me].state = State::Blocked;
    run_next(guard, me)
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
        object.readers = object.readers.saturating_sub(1);
    } else {
        object.holder = None;
    }
    object.last = Some((me, site_key(site)));
    sched.wake(obj);
}

/// A condition variable wait: releases `mutex`, blocks on `cv` until
/// notified (or, if `timed`, until nothing else can run), then reacquires
/// `mutex`. `Some(timed_out)` under control.
pub fn wait(cv: usize, mutex: usize, timed: bool, site: Site) -> Option<bool> {
    let (mut guard, me) = enter()?;
    let sched = Sched::of(&mut guard);
    release_held(sched, mutex, Op::Unlock, me, site);
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

/// Registers a thread about to be spawned under control. `rust`: a Rust
/// thread, which unwinds out of an abandoned run and is waited for by
/// [`finish`] (a C thread parks instead and is not waited for).
pub fn spawn_begin(site: Site, rust: bool) -> Option<ThreadKey> {
    let (mut guard, _me) = enter()?;
    let sched = Sched::of(&mut guard);
    let tid = sched.threads.len();
    let mut thread = Thread::new(None, site);
    if sched
        .strategy
        .is_some_and(|s| !matches!(s, Strategy::Direct))
    {
        thread.priority = 1_000_000 + Sched::priority_decision(site);
    }
    sched.threads.push(thread);
    if rust {
        *ALIVE.lock().unwrap_or_else(|p| p.into_inner()) += 1;
    }
    Some(ThreadKey {
        epoch: sched.epoch,
        tid,
        rust,
    })
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
        let mut wake = None;
        let mut guard = lock();
        if let Some(sched) = guard.as_mut().filter(|s| s.epoch == key.epoch && !s.abort) {
            sched.threads[key.tid].state = State::Finished;
            sched.threads[key.tid].os = None;
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
                    wake = sched.threads[next].os.clone();
                }
            }
        }
        drop(guard);
        if let Some(os) = wake {
            os.unpark();
        }
        ME.with(|m| {
            m.set(ThreadKey {
                epoch: 0,
                tid: 0,
                rust: false,
            })
        });
        if key.rust {
            exited();
        }
    }
}

fn exited() {
    let mut alive = ALIVE.lock().unwrap_or_else(|p| p.into_inner());
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

fn join_key(tid: usize) -> usize {
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
    ME.with(|m| {
        m.set(ThreadKey {
            epoch: 0,
            tid: 0,
            rust: false,
        })
    });
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
