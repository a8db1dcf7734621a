//! The scheduler of controlled runs: one thread runs at a time, and at every
//! scheduling point the next one comes from the decision stream.
//!
//! Threads are real OS threads (so thread-locals, stacks and debuggers work
//! as usual) that pass a baton: each waits, parked, until the scheduler
//! names it current. Every operation of [`crate::thread`] and
//! [`crate::sync`] (and of libdst's pthread functions) calls in here first;
//! outside a controlled run (`runtime::control_key`) each call returns at
//! once and the std types do the work.
//!
//! The life of a run, and where each part lives:
//! - The run's first controlled operation creates the scheduler (`enter`),
//!   with the calling thread as thread 0, and marks the region
//!   (`STATUS_CONTROLLED`), so the SDK's own properties are reported.
//! - Each operation is a *scheduling point* ([`point`], and the object
//!   operations of `objects.rs`: locks, condition variables, atomics). The
//!   scheduler picks the next thread: alone when one thread can run; by the
//!   run's strategy (`strategy/`) when several can (direct, PCT or POS, chosen by the
//!   first contested point's decision).
//! - The chosen thread gets the baton (`handoff.rs`: park and unpark), and
//!   threads are spawned, joined and finished there too.
//! - A run ends in a finding (`report.rs`) when every live thread is blocked
//!   (deadlock), when it exceeds the step bound (livelock or hang), or when a
//!   thread outlives the target body; the scheduler then *abandons* the
//!   run's threads: each unwinds with an [`Abandoned`] payload, which
//!   executors recognize.

use std::cell::Cell;
use std::collections::HashMap;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar as StdCondvar, Mutex as StdMutex, MutexGuard as StdGuard};

use crate::catalog::{DEADLOCK, LIVELOCK};
use crate::runtime::{self, DecisionSite};

mod handoff;
mod objects;
mod report;
mod strategy;

pub use handoff::{
    Exit, finish, is_finished, join, run_body, spawn_begin, spawn_failed, thread_start,
};
pub use objects::{access, acquire, notify, release, release_either, try_acquire, wait};

use handoff::{abandon, end_run, wait_turn};
use objects::Object;
use report::report;
use strategy::{Contest, Strategy};

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

    fn decision(self) -> DecisionSite<'static> {
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
    /// In a timed wait: wakes (timed out) when nothing else can run.
    timed: bool,
    timed_out: bool,
}

struct Sched {
    key: (usize, u64),
    epoch: u64,
    threads: Vec<Thread>,
    current: usize,
    steps: u64,
    max_steps: u64,
    /// Chosen at the run's first contested point.
    strategy: Option<Box<dyn Strategy>>,
    abort: bool,
    tracing: bool,
    objects: HashMap<usize, Object>,
    /// Scratch space of [`Sched::pick`].
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
            _ => {
                let threads = self.threads.len();
                let strategy = self
                    .strategy
                    .get_or_insert_with(|| strategy::read(site, threads));
                let chosen = strategy.choose(&Contest {
                    order: &order,
                    me,
                    yielding,
                    site,
                    threads: &self.threads,
                });
                debug_assert!(
                    order.contains(&chosen),
                    "a strategy picks a runnable thread"
                );
                Some(chosen)
            }
        };
        self.order = order;
        chosen
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
        report::step(sched, next, preempted.then_some(me));
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
