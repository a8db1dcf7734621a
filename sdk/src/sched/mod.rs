//! The scheduler of controlled runs: one thread runs at a time, and at every
//! scheduling point the next one comes from the decision stream.
//!
//! Rust threads spawned on the run's main thread (or by its threads) are
//! continuations on that OS thread (`carrier.rs`): a switch is a stack
//! swap. C threads (libdst's pthreads, which need glibc's per-thread state)
//! and threads spawned from them are OS threads that pass a baton: each
//! waits, parked, until the scheduler names it current. Every operation of
//! [`crate::thread`] and [`crate::sync`] (and of libdst's pthread
//! functions) calls in here first; outside a controlled run
//! (`runtime::control_key`) each call returns at once and the std types do
//! the work.
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
//! - The chosen thread gets the turn: thread 0 resumes the continuation
//!   whose turn it is (`dispatch`), a continuation suspends back to it, an
//!   OS thread is unparked (`handoff.rs`, where threads are spawned, joined
//!   and finished too).
//! - A run ends in a finding (`report.rs`) when every live thread is blocked
//!   (deadlock), when it exceeds the step bound (livelock or hang), or when a
//!   thread outlives the target body; the scheduler then *abandons* the
//!   run's threads: each unwinds with an [`Abandoned`] payload, which
//!   executors recognize, and [`finish`] unwinds the continuations left.

use std::cell::Cell;
use std::collections::HashMap;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar as StdCondvar, Mutex as StdMutex, MutexGuard as StdGuard};

use crate::catalog::{DEADLOCK, LIVELOCK};
use crate::runtime::{self, DecisionSite};

#[cfg(not(target_family = "wasm"))]
mod carrier;
#[cfg(target_family = "wasm")]
#[path = "carrier_none.rs"]
mod carrier;
mod handoff;
mod objects;
mod report;
mod strategy;

pub(crate) use carrier::local;
pub use handoff::{
    Exit, finish, is_finished, join, run_body, spawn_begin, spawn_continuation, spawn_failed,
    teardown_scope, thread_start,
};
pub use objects::{access, acquire, downgrade, notify, release, release_either, try_acquire, wait};

use handoff::{abandon, end_run, retire, wait_turn};
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
    Park,
    Unpark,
    Downgrade,
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
            Op::Park => "park",
            Op::Unpark => "unpark",
            Op::Downgrade => "downgrade",
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
    /// A continuation on the carrier (`carrier.rs`), not an OS thread.
    co: bool,
}

impl ThreadKey {
    const NONE: ThreadKey = ThreadKey {
        epoch: 0,
        tid: 0,
        rust: false,
        co: false,
    };

    /// Whether this thread is a continuation (else an OS thread).
    pub fn is_continuation(self) -> bool {
        self.co
    }

    /// The run it belongs to.
    pub fn epoch(self) -> u64 {
        self.epoch
    }

    /// Its number in the run (0: the run's main thread).
    pub fn tid(self) -> usize {
        self.tid
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Runnable,
    Blocked,
    Finished,
}

struct Thread {
    /// The OS thread to unpark when it is this thread's turn (a
    /// continuation's is thread 0's, the carrier).
    os: Option<std::thread::Thread>,
    /// A continuation on the carrier.
    co: bool,
    state: State,
    op: Op,
    obj: usize,
    site: Site,
    /// In a timed wait: wakes (timed out) when nothing else can run.
    timed: bool,
    timed_out: bool,
    /// `unpark`'s token, which the next `park` consumes.
    token: bool,
    name: Option<std::sync::Arc<str>>,
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
    static ME: Cell<ThreadKey> = const { Cell::new(ThreadKey::NONE) };
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
            ..ThreadKey::NONE
        })
    });
    UNWINDS.with(|u| u.set(BODY.with(Cell::get)));
    Some((guard, 0))
}

/// What the SDK keeps per controlled thread in OS-thread-locals, switched
/// with continuations (`carrier.rs`).
#[cfg(not(target_family = "wasm"))]
#[derive(Clone, Copy)]
struct Context {
    me: ThreadKey,
    body: bool,
    unwinds: bool,
}

#[cfg(not(target_family = "wasm"))]
fn context() -> Context {
    Context {
        me: ME.with(Cell::get),
        body: BODY.with(Cell::get),
        unwinds: UNWINDS.with(Cell::get),
    }
}

#[cfg(not(target_family = "wasm"))]
fn restore_context(context: Context) {
    ME.with(|m| m.set(context.me));
    BODY.with(|b| b.set(context.body));
    UNWINDS.with(|u| u.set(context.unwinds));
}

/// The context of a continuation that starts.
#[cfg(not(target_family = "wasm"))]
fn set_context(key: ThreadKey) {
    restore_context(Context {
        me: key,
        body: false,
        unwinds: true,
    });
}

/// Whether the caller runs on the carrier (thread 0's OS thread, or one
/// of its continuations), where spawned Rust threads are continuations.
fn on_carrier() -> bool {
    let me = ME.with(Cell::get);
    me.epoch != 0 && (me.tid == 0 || me.co)
}

impl Thread {
    fn new(os: Option<std::thread::Thread>, site: Site) -> Thread {
        Thread {
            os,
            co: false,
            state: State::Runnable,
            op: Op::Start,
            obj: 0,
            site,
            timed: false,
            timed_out: false,
            token: false,
            name: None,
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
                runtime::count_contested();
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
    let me_co = sched.threads[me].co;
    let carried = |t: usize| t == 0 || sched.threads[t].co;
    // An OS thread to wake: the next one's own, or the carrier's if the
    // next is a continuation and the caller is not on the carrier.
    let wake = if carried(next) && carried(me) {
        None
    } else {
        sched.threads[next].os.clone()
    };
    // Wake it only once the lock is free, so that it does not wake into a
    // held lock and bounce back.
    drop(guard);
    if let Some(os) = wake {
        os.unpark();
    }
    if me_co {
        carrier::suspend();
        wait_turn(lock(), me)
    } else if me == 0 {
        dispatch()
    } else {
        wait_turn(lock(), me)
    }
}

/// Thread 0 waits for its turn: meanwhile it resumes the continuations
/// whose turn it is, and parks while an OS thread has it.
fn dispatch() -> Guard {
    let epoch = ME.with(Cell::get).epoch;
    let mut resumed = false;
    loop {
        let guard = lock();
        let (current, co) = match guard.as_ref() {
            Some(s) if s.epoch == epoch && !s.abort => (s.current, s.threads[s.current].co),
            // A continuation ended the run (its finding is recorded): end
            // it as its finder would. Else an OS thread did, and ends the
            // process itself when it must: leave as any other thread.
            _ if resumed => end_run(guard),
            _ => abandon(guard),
        };
        if current == 0 {
            return guard;
        }
        drop(guard);
        resumed = co;
        if !co {
            std::thread::park();
            continue;
        }
        if carrier::resume(current) {
            let key = ThreadKey {
                epoch,
                tid: current,
                rust: true,
                co: true,
            };
            if let Some(os) = retire(key) {
                os.unpark();
            }
        }
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

/// The name the caller's controlled thread was spawned with (Builder::name),
/// and its key; None when the caller is not under control.
pub fn current() -> Option<(ThreadKey, Option<std::sync::Arc<str>>)> {
    let me = ME.with(Cell::get);
    if me.epoch == 0 {
        return None;
    }
    let guard = lock();
    let sched = guard.as_ref().filter(|s| s.epoch == me.epoch)?;
    Some((me, sched.threads[me.tid].name.clone()))
}

/// Names `key`'s thread (before it first runs).
pub fn set_name(key: ThreadKey, name: std::sync::Arc<str>) {
    let mut guard = lock();
    if let Some(sched) = guard.as_mut().filter(|s| s.epoch == key.epoch) {
        sched.threads[key.tid].name = Some(name);
    }
}

fn park_key(tid: usize) -> usize {
    usize::MAX / 2 - tid
}

/// `thread::park` under control: blocks until the thread's token is set
/// (consuming it), a scheduling point either way. Returns whether the
/// caller is under control.
pub fn park(site: Site) -> bool {
    let Some((mut guard, me)) = enter() else {
        return false;
    };
    set_pending(&mut guard, me, Op::Park, park_key(me), site);
    guard = run_next(guard, me);
    while !std::mem::take(&mut Sched::of(&mut guard).threads[me].token) {
        guard = block(guard, me);
    }
    true
}

/// `thread::park_timeout` under control: consumes the token if set, else
/// yields (the timeout passes). Returns whether the caller is under control.
pub fn park_timeout(site: Site) -> bool {
    let Some((mut guard, me)) = enter() else {
        return false;
    };
    let sched = Sched::of(&mut guard);
    let op = if std::mem::take(&mut sched.threads[me].token) {
        Op::Park
    } else {
        Op::Sleep
    };
    set_pending(&mut guard, me, op, park_key(me), site);
    drop(run_next(guard, me));
    true
}

/// `Thread::unpark` under control: sets `key`'s token and wakes it if it
/// parks; a scheduling point for a controlled caller. Returns false when
/// `key` is not a thread of the current run.
pub fn unpark(key: ThreadKey, site: Site) -> bool {
    match enter() {
        Some((mut guard, me)) => {
            let sched = Sched::of(&mut guard);
            if sched.epoch != key.epoch {
                return false;
            }
            sched.threads[key.tid].token = true;
            sched.wake(park_key(key.tid));
            set_pending(&mut guard, me, Op::Unpark, park_key(key.tid), site);
            drop(run_next(guard, me));
            true
        }
        None => {
            // From outside the run (or while unwinding): no scheduling point.
            let mut guard = lock();
            let Some(sched) = guard.as_mut().filter(|s| s.epoch == key.epoch) else {
                return false;
            };
            sched.threads[key.tid].token = true;
            sched.wake(park_key(key.tid));
            true
        }
    }
}

/// Blocks `me` (already marked with its operation) until woken and
/// scheduled again.
fn block(mut guard: Guard, me: usize) -> Guard {
    Sched::of(&mut guard).threads[me].state = State::Blocked;
    run_next(guard, me)
}
