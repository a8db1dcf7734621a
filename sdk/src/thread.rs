//! Threads whose schedule is a decision: `std::thread`'s API, under control.
//!
//! In a controlled run (an explorer is attached, or local mode replays
//! `DST_INPUT` / `DST_SEED`), one thread runs at a time and spawn, join,
//! [`yield_now`], [`sleep`], [`park`] and [`Thread::unpark`] are scheduling
//! points (see [`crate::sync`] for the rest). Otherwise these are std's own
//! functions. Threads spawned with `std::thread` are not controlled; use
//! these.
//!
//! Under control, a thread spawned by the run's main thread (or by one of
//! its threads) is a *continuation* on the main thread's OS thread: its
//! own stack (std's default size, or [`Builder::stack_size`]; guard page
//! below; committed as touched), switched to in user space. So:
//! - [`thread_local!`](crate::thread_local) values are per controlled
//!   thread, as std's are per OS thread. **std's `thread_local!` is shared
//!   by every controlled thread of a run** (they are one OS thread); so is
//!   `std::thread::current()`. Use [`current`] and this module's macro.
//! - A stack overflow faults on the guard page: a crash of the run, which
//!   the explorer reports as a finding whose cause is `stack overflow`,
//!   placed in the function that recursed (the replay runs in a forked
//!   child, where the SDK records the fault and the stack pointer).
//! - Threads left when a run ends (abandoned after a deadlock, or outliving
//!   the target) are unwound in place: their destructors run, with the
//!   SDK's operations no longer scheduling points.
//!
//! ```
//! use std::sync::Arc;
//! use dst::sync::atomic::{AtomicU64, Ordering};
//!
//! let hits = Arc::new(AtomicU64::new(0));
//! let handles: Vec<_> = (0..2)
//!     .map(|_| {
//!         let hits = Arc::clone(&hits);
//!         dst::thread::spawn(move || {
//!             let seen = hits.load(Ordering::SeqCst);
//!             hits.store(seen + 1, Ordering::SeqCst); // a racy increment
//!         })
//!     })
//!     .collect();
//! for handle in handles {
//!     handle.join().unwrap();
//! }
//! dst::assert_sometimes!(hits.load(Ordering::SeqCst) == 1, "an increment is lost");
//! ```

use std::cell::{Cell, RefCell};
use std::io;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

pub use std::thread::{Result, panicking};

use crate::sched::{self, Op, ThreadKey};
pub use crate::sched::{Abandoned, DEFAULT_MAX_STEPS, finish, run_body};

/// Whether the calling thread is a thread of a controlled run (for panic
/// hooks that tell a target's panics from the controller's own).
pub fn is_controlled() -> bool {
    sched::is_controlled()
}

/// A thread's identity, as `std::thread::ThreadId`: a controlled thread's
/// is its run and number, others' std's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThreadId(Id);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Id {
    Std(std::thread::ThreadId),
    Controlled { run: u64, tid: usize },
}

/// A handle to a thread, as `std::thread::Thread`.
#[derive(Debug, Clone)]
pub struct Thread {
    id: ThreadId,
    name: Option<Arc<str>>,
    key: Option<ThreadKey>,
    std: Option<std::thread::Thread>,
}

impl Thread {
    fn controlled(key: ThreadKey, name: Option<Arc<str>>) -> Thread {
        Thread {
            id: ThreadId(Id::Controlled {
                run: key.epoch(),
                tid: key.tid(),
            }),
            name,
            key: Some(key),
            std: None,
        }
    }

    fn of_std(thread: std::thread::Thread) -> Thread {
        Thread {
            id: ThreadId(Id::Std(thread.id())),
            name: thread.name().map(Arc::from),
            key: None,
            std: Some(thread),
        }
    }

    pub fn id(&self) -> ThreadId {
        self.id
    }

    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Makes the thread's next (or current) [`park`] return; under control
    /// a scheduling point.
    #[track_caller]
    pub fn unpark(&self) {
        if let Some(key) = self.key
            && sched::unpark(key, sched::here())
        {
            return;
        }
        if let Some(thread) = &self.std {
            thread.unpark();
        }
    }
}

/// The calling thread, as `std::thread::current` (a controlled thread's
/// own handle, not its OS thread's).
pub fn current() -> Thread {
    match sched::current() {
        Some((key, name)) => Thread::controlled(key, name),
        None => Thread::of_std(std::thread::current()),
    }
}

/// Blocks until the thread's token is available (see [`Thread::unpark`]),
/// as `std::thread::park`; under control a scheduling point, and it never
/// returns spuriously.
#[track_caller]
pub fn park() {
    if !sched::park(sched::here()) {
        std::thread::park();
    }
}

/// As `std::thread::park_timeout`; under control (no virtual clock) it
/// consumes the token if there is one, else it is a yield that returns
/// without it, as a timeout may.
#[track_caller]
pub fn park_timeout(duration: Duration) {
    if !sched::park_timeout(sched::here()) {
        std::thread::park_timeout(duration);
    }
}

/// What a finished thread left: its value or its panic.
type Packet<T> = Arc<StdMutex<Option<Result<T>>>>;

enum Inner<T> {
    Os(std::thread::JoinHandle<T>),
    Continuation(Packet<T>),
}

/// An owned permission to join a thread, as `std::thread::JoinHandle`.
pub struct JoinHandle<T> {
    inner: Inner<T>,
    key: Option<ThreadKey>,
    thread: Thread,
}

impl<T> JoinHandle<T> {
    /// Waits for the thread to finish (a scheduling point under control).
    #[track_caller]
    pub fn join(self) -> Result<T> {
        if let Some(key) = self.key {
            sched::join(key, sched::here());
        }
        match self.inner {
            Inner::Os(handle) => handle.join(),
            Inner::Continuation(packet) => take(&packet),
        }
    }

    pub fn thread(&self) -> &Thread {
        &self.thread
    }

    pub fn is_finished(&self) -> bool {
        match (self.key, &self.inner) {
            (Some(key), _) => sched::is_finished(key),
            (None, Inner::Os(handle)) => handle.is_finished(),
            (None, Inner::Continuation(_)) => true,
        }
    }
}

fn take<T>(packet: &Packet<T>) -> Result<T> {
    let value = packet.lock().unwrap_or_else(|p| p.into_inner()).take();
    // A continuation that never ran to its end (its run was abandoned)
    // left nothing: as std reports a thread that died, an error.
    value.unwrap_or_else(|| Err(Box::new(Abandoned)))
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle").finish_non_exhaustive()
    }
}

/// Thread configuration, as `std::thread::Builder`.
#[derive(Debug, Default)]
pub struct Builder {
    name: Option<String>,
    stack_size: Option<usize>,
}

impl Builder {
    pub fn new() -> Builder {
        Builder::default()
    }

    pub fn name(self, name: String) -> Builder {
        Builder {
            name: Some(name),
            ..self
        }
    }

    pub fn stack_size(self, size: usize) -> Builder {
        Builder {
            stack_size: Some(size),
            ..self
        }
    }

    fn std(&self) -> std::thread::Builder {
        let mut builder = std::thread::Builder::new();
        if let Some(name) = &self.name {
            builder = builder.name(name.clone());
        }
        if let Some(size) = self.stack_size {
            builder = builder.stack_size(size);
        }
        builder
    }

    /// Spawns a thread; under control it runs when the schedule picks it,
    /// and the spawn is a scheduling point (nominally the caller goes on).
    #[track_caller]
    pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let site = sched::here();
        let Some(key) = sched::spawn_begin(site, true) else {
            let inner = self.std().spawn(f)?;
            let thread = Thread::of_std(inner.thread().clone());
            return Ok(JoinHandle {
                inner: Inner::Os(inner),
                key: None,
                thread,
            });
        };
        // SAFETY: `f` is `'static`: it borrows nothing.
        let inner = unsafe { self.spawn_controlled(key, f) };
        let inner = match inner {
            Ok(inner) => inner,
            Err(err) => {
                sched::spawn_failed(key);
                return Err(err);
            }
        };
        let name = self.name.map(Arc::from);
        if let Some(name) = &name {
            sched::set_name(key, Arc::clone(name));
        }
        sched::point(Op::Spawn, 0, site);
        Ok(JoinHandle {
            inner,
            key: Some(key),
            thread: Thread::controlled(key, name),
        })
    }

    /// Starts `key`'s thread running `f`: a continuation, or an OS thread.
    ///
    /// # Safety
    /// What `f` borrows must outlive the thread (`'static`, or a scope that
    /// joins or tears it down first).
    unsafe fn spawn_controlled<'a, F, T>(&self, key: ThreadKey, f: F) -> io::Result<Inner<T>>
    where
        F: FnOnce() -> T + Send + 'a,
        T: Send + 'a,
    {
        let packet: Packet<T> = Arc::new(StdMutex::new(None));
        if key.is_continuation() {
            let result = Arc::clone(&packet);
            let body = move || {
                let value = catch_unwind(AssertUnwindSafe(f));
                *result.lock().unwrap_or_else(|p| p.into_inner()) = Some(value);
            };
            // SAFETY: passed on from the caller.
            unsafe { sched::spawn_continuation(key, self.stack_size, body)? };
            return Ok(Inner::Continuation(packet));
        }
        let run = move || {
            let _exit = sched::thread_start(key);
            match catch_unwind(AssertUnwindSafe(f)) {
                Ok(value) => value,
                Err(payload) => resume_unwind(payload),
            }
        };
        // SAFETY: the caller keeps what `f` borrows alive until the thread
        // ends (scopes join their threads before returning).
        let run: Box<dyn FnOnce() -> T + Send + 'static> = unsafe {
            std::mem::transmute::<Box<dyn FnOnce() -> T + Send + 'a>, Box<dyn FnOnce() -> T + Send>>(
                Box::new(run),
            )
        };
        // SAFETY: as above, for the value the thread returns.
        let spawned = unsafe { self.std().spawn_unchecked(run)? };
        Ok(Inner::Os(spawned))
    }
}

/// Spawns a thread, as `std::thread::spawn`.
#[track_caller]
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new().spawn(f).expect("failed to spawn thread")
}

/// Gives other threads a turn: under control, a scheduling point whose
/// nominal choice is the next runnable thread.
#[track_caller]
pub fn yield_now() {
    if !sched::point(Op::Yield, 0, sched::here()) {
        std::thread::yield_now();
    }
}

/// Sleeps; under control (no virtual time yet) it is a yield: other
/// threads run first, and no real time passes.
#[track_caller]
pub fn sleep(duration: Duration) {
    if !sched::point(Op::Sleep, 0, sched::here()) {
        std::thread::sleep(duration);
    }
}

/// A scope for threads that borrow from the caller, as
/// `std::thread::Scope`: every thread spawned in it is joined before
/// [`scope`] returns.
pub struct Scope<'scope, 'env: 'scope> {
    /// Controlled threads spawned here, with whether they were joined.
    spawned: StdMutex<Vec<(ThreadKey, Arc<AtomicBool>)>>,
    /// Uncontrolled (std) threads still running, and the scope's thread.
    running: Arc<(StdMutex<usize>, std::thread::Thread)>,
    /// A thread of the scope panicked.
    panicked: Arc<AtomicBool>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

/// A handle to join a scoped thread, as `std::thread::ScopedJoinHandle`.
pub struct ScopedJoinHandle<'scope, T> {
    handle: JoinHandle<T>,
    joined: Option<Arc<AtomicBool>>,
    _scope: PhantomData<&'scope ()>,
}

/// Runs `f` with a [`Scope`] whose threads may borrow non-`'static` data,
/// as `std::thread::scope`: they are all joined before it returns, and if
/// one panicked and was not joined, this panics.
#[track_caller]
pub fn scope<'env, F, T>(f: F) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    let site = sched::here();
    let scope = Scope {
        spawned: StdMutex::new(Vec::new()),
        running: Arc::new((StdMutex::new(0), std::thread::current())),
        panicked: Arc::new(AtomicBool::new(false)),
        _scope: PhantomData,
        _env: PhantomData,
    };
    let result = catch_unwind(AssertUnwindSafe(|| f(&scope)));
    let spawned = std::mem::take(&mut *scope.spawned.lock().unwrap_or_else(|p| p.into_inner()));
    let joined_all = match &result {
        Ok(_) => {
            for (key, _) in &spawned {
                sched::join(*key, site);
            }
            spawned
                .iter()
                .all(|(_, joined)| joined.load(Ordering::Relaxed))
        }
        Err(_) => {
            // The borrowed data goes away with the caller's frame: threads
            // that have not finished unwind now, before it does.
            let keys: Vec<ThreadKey> = spawned.iter().map(|(key, _)| *key).collect();
            sched::teardown_scope(&keys);
            true
        }
    };
    while *scope.running.0.lock().unwrap_or_else(|p| p.into_inner()) > 0 {
        std::thread::park();
    }
    match result {
        Err(payload) => resume_unwind(payload),
        Ok(_) if !joined_all && scope.panicked.load(Ordering::Relaxed) => {
            panic!("a scoped thread panicked")
        }
        Ok(value) => value,
    }
}

/// Counts an uncontrolled scoped thread out, however it ends.
struct Running(Arc<(StdMutex<usize>, std::thread::Thread)>);

impl Drop for Running {
    fn drop(&mut self) {
        let mut running = self.0.0.lock().unwrap_or_else(|p| p.into_inner());
        *running -= 1;
        if *running == 0 {
            self.0.1.unpark();
        }
    }
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// Spawns a scoped thread, as `std::thread::Scope::spawn`.
    #[track_caller]
    pub fn spawn<F, T>(&'scope self, f: F) -> ScopedJoinHandle<'scope, T>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let site = sched::here();
        let panicked = Arc::clone(&self.panicked);
        let f = move || {
            let value = catch_unwind(AssertUnwindSafe(f));
            value.unwrap_or_else(|payload| {
                panicked.store(true, Ordering::Relaxed);
                resume_unwind(payload)
            })
        };
        let Some(key) = sched::spawn_begin(site, true) else {
            *self.running.0.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            let running = Running(Arc::clone(&self.running));
            let f = move || {
                let _running = running;
                f()
            };
            // SAFETY: `scope` waits until this thread has ended (its
            // `Running` dropped) before what `f` borrows goes away.
            let handle = unsafe { std::thread::Builder::new().spawn_unchecked(f) }
                .expect("failed to spawn thread");
            let thread = Thread::of_std(handle.thread().clone());
            return ScopedJoinHandle {
                handle: JoinHandle {
                    inner: Inner::Os(handle),
                    key: None,
                    thread,
                },
                joined: None,
                _scope: PhantomData,
            };
        };
        // SAFETY: `scope` joins this thread before its borrows end, or
        // tears it down (`teardown_scope`) when it unwinds.
        let inner =
            unsafe { Builder::new().spawn_controlled(key, f) }.expect("failed to spawn thread");
        let joined = Arc::new(AtomicBool::new(false));
        self.spawned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((key, Arc::clone(&joined)));
        sched::point(Op::Spawn, 0, site);
        ScopedJoinHandle {
            handle: JoinHandle {
                inner,
                key: Some(key),
                thread: Thread::controlled(key, None),
            },
            joined: Some(joined),
            _scope: PhantomData,
        }
    }
}

impl<T> ScopedJoinHandle<'_, T> {
    /// Waits for the thread to finish (a scheduling point under control).
    #[track_caller]
    pub fn join(self) -> Result<T> {
        if let Some(joined) = &self.joined {
            joined.store(true, Ordering::Relaxed);
        }
        self.handle.join()
    }

    pub fn thread(&self) -> &Thread {
        self.handle.thread()
    }

    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }
}

/// A thread-local whose value is per controlled thread (see the module's
/// documentation); made by [`thread_local!`](crate::thread_local).
pub struct LocalKey<T: 'static> {
    std: &'static std::thread::LocalKey<T>,
    init: fn() -> T,
    /// Its index among thread-locals, plus one (0: not assigned yet).
    index: AtomicUsize,
}

impl<T: 'static> LocalKey<T> {
    #[doc(hidden)]
    pub const fn new(std: &'static std::thread::LocalKey<T>, init: fn() -> T) -> LocalKey<T> {
        LocalKey {
            std,
            init,
            index: AtomicUsize::new(0),
        }
    }

    fn index(&self) -> usize {
        static NEXT: AtomicUsize = AtomicUsize::new(1);
        let index = self.index.load(Ordering::Relaxed);
        if index != 0 {
            return index - 1;
        }
        let fresh = NEXT.fetch_add(1, Ordering::Relaxed);
        match self
            .index
            .compare_exchange(0, fresh, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => fresh - 1,
            Err(won) => won - 1,
        }
    }

    /// Runs `f` with this thread's value, as `std::thread::LocalKey::with`.
    pub fn with<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&T) -> R,
    {
        match sched::local(self.index(), self.init) {
            // SAFETY: the value lives in the running continuation's slot
            // until that thread ends, which cannot happen while it runs `f`.
            Some(value) => f(unsafe { &*value }),
            None => self.std.with(f),
        }
    }
}

impl<T: 'static> LocalKey<Cell<T>> {
    pub fn set(&'static self, value: T) {
        self.with(|cell| cell.set(value))
    }

    pub fn get(&'static self) -> T
    where
        T: Copy,
    {
        self.with(Cell::get)
    }

    pub fn take(&'static self) -> T
    where
        T: Default,
    {
        self.with(Cell::take)
    }

    pub fn replace(&'static self, value: T) -> T {
        self.with(|cell| cell.replace(value))
    }
}

impl<T: 'static> LocalKey<RefCell<T>> {
    pub fn with_borrow<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&T) -> R,
    {
        self.with(|cell| f(&cell.borrow()))
    }

    pub fn with_borrow_mut<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&mut T) -> R,
    {
        self.with(|cell| f(&mut cell.borrow_mut()))
    }

    pub fn set(&'static self, value: T) {
        self.with(|cell| *cell.borrow_mut() = value)
    }

    pub fn take(&'static self) -> T
    where
        T: Default,
    {
        self.with(RefCell::take)
    }

    pub fn replace(&'static self, value: T) -> T {
        self.with(|cell| cell.replace(value))
    }
}

impl<T: 'static> std::fmt::Debug for LocalKey<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalKey").finish_non_exhaustive()
    }
}

/// Declares thread-locals whose values are per controlled thread, as
/// `std::thread_local!` (which, under control, continuations share):
///
/// ```
/// use std::cell::Cell;
/// dst::thread_local! {
///     static DEPTH: Cell<u32> = const { Cell::new(0) };
/// }
/// DEPTH.set(DEPTH.get() + 1);
/// assert_eq!(DEPTH.get(), 1);
/// ```
#[macro_export]
macro_rules! thread_local {
    () => {};
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr; $($rest:tt)*) => {
        $crate::thread_local!($(#[$attr])* $vis static $name: $t = $init);
        $crate::thread_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr) => {
        $(#[$attr])* $vis static $name: $crate::thread::LocalKey<$t> = {
            ::std::thread_local!(static STD: $t = $init);
            fn init() -> $t {
                $init
            }
            $crate::thread::LocalKey::new(&STD, init)
        };
    };
}
