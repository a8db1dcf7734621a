//! Interposed pthread functions: an unmodified pthread program is scheduled
//! by the explorer.
//!
//! With the crate's `interpose` feature (libdst's) the functions below
//! carry the C library's names; without it (the fuzzing engine's, whose
//! harnesses, OSS-Fuzz's among them, expect the C library's own threads
//! and locks: sqlite's recursive mutex deadlocks under control) they are
//! only Rust functions, and dst.h's `dst_*` helpers stay.
//!
//! libdst defines `pthread_create`, `pthread_join`, the mutex, condition
//! variable and reader-writer lock functions, `sched_yield`, `usleep` and
//! `nanosleep`. A program linked with libdst (or run with
//! `LD_PRELOAD=libdst.so`) calls these first; each hands the operation to
//! the SDK's scheduler (`dst::sched`) when the run is controlled (an
//! explorer is attached, or local mode replays `DST_INPUT` / `DST_SEED`),
//! and otherwise forwards to the C library's own function
//! (`dlsym(RTLD_NEXT)`). Under control one thread runs at a time, and a
//! mutex, condition variable or lock is the scheduler's state: the C
//! library's object is not touched.
//!
//! Limits: recursive and error-checking mutexes behave as normal ones (a
//! relock by the owner deadlocks); `pthread_once`, barriers, spinlocks,
//! semaphores and futexes are not controlled; plain memory shared without a
//! lock runs as sequentially consistent, with scheduling points only at the
//! functions above and the `dst_atomic_*` helpers and `dst_yield` of
//! `dst.h`. A thread still running when `main` returns is reported.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once, OnceLock};

use dst_sdk::random::ForeignSite;
use dst_sdk::sched::{self, Exit, Op, Site, ThreadKey};

type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;

/// The C library's definition of `name` (the next one after libdst's).
fn next_symbol(name: &'static [u8], cache: &OnceLock<usize>) -> usize {
    *cache.get_or_init(|| {
        // SAFETY: `name` is a NUL-terminated symbol name; RTLD_NEXT looks
        // the symbol up in the objects loaded after this one.
        let found = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
        if found == 0 {
            let text = String::from_utf8_lossy(&name[..name.len() - 1]);
            eprintln!("dst: cannot find the C library's {text}");
            // SAFETY: ends the process; without the real function nothing can go on.
            unsafe { libc::_exit(86) };
        }
        found
    })
}

/// `real!(name: fn type)`: the C library's function, as that type.
macro_rules! real {
    ($name:ident : $ty:ty) => {{
        static CACHE: OnceLock<usize> = OnceLock::new();
        let address = next_symbol(concat!(stringify!($name), "\0").as_bytes(), &CACHE);
        // SAFETY: the symbol is the C library's function of this name, whose
        // C signature `$ty` spells out.
        unsafe { std::mem::transmute::<usize, $ty>(address) }
    }};
}

/// Controlled threads by `pthread_t`, for `pthread_join`.
static THREADS: Mutex<Option<HashMap<libc::pthread_t, ThreadKey>>> = Mutex::new(None);

fn threads<R>(f: impl FnOnce(&mut HashMap<libc::pthread_t, ThreadKey>) -> R) -> R {
    let mut guard = THREADS.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

thread_local! {
    /// The C call site `dst.h`'s macros announced for the next operation.
    static NEXT_SITE: Cell<Option<ForeignSite>> = const { Cell::new(None) };
    /// Marks a controlled C thread finished when it exits (also through
    /// `pthread_exit`).
    static EXIT: RefCell<Option<Exit>> = const { RefCell::new(None) };
}

/// Announces the source line of the pthread call that follows (`dst.h`
/// wraps the interposed functions in macros that call this first).
///
/// # Safety
/// `file` must be a static NUL-terminated string (`__FILE__`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_site(file: *const c_char, line: c_uint) {
    // SAFETY: the caller's contract.
    let site = unsafe { ForeignSite::new(file, line, ForeignSite::id_of(file, line)) };
    NEXT_SITE.with(|s| s.set(Some(site)));
}

/// The site of the current operation: the one announced, else this
/// function's caller in libdst (a program built without `dst.h`).
#[track_caller]
fn site() -> Site {
    match NEXT_SITE.with(Cell::take) {
        Some(site) => Site::C(site),
        None => Site::Rust(Location::caller()),
    }
}

struct Start {
    key: ThreadKey,
    start: StartRoutine,
    arg: *mut c_void,
}

extern "C" fn trampoline(start: *mut c_void) -> *mut c_void {
    // SAFETY: `pthread_create` below passes a leaked `Box<Start>`, used once.
    let start = unsafe { Box::from_raw(start.cast::<Start>()) };
    let exit = sched::thread_start(start.key);
    EXIT.with(|e| *e.borrow_mut() = Some(exit));
    (start.start)(start.arg)
}

/// At `exit`: threads still running are reported (the main thread's
/// controlled run ends here).
extern "C" fn at_exit() {
    let _ = sched::finish(Ok(()));
}

fn register_exit() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a plain function to run at exit.
        unsafe { libc::atexit(at_exit) };
    });
}

/// # Safety
/// As `pthread_create`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: StartRoutine,
    arg: *mut c_void,
) -> c_int {
    let real = real!(pthread_create: unsafe extern "C" fn(*mut libc::pthread_t, *const libc::pthread_attr_t, StartRoutine, *mut c_void) -> c_int);
    let site = site();
    let Some(key) = sched::spawn_begin(site, false) else {
        // SAFETY: forwarded unchanged.
        return unsafe { real(thread, attr, start, arg) };
    };
    register_exit();
    let boxed = Box::into_raw(Box::new(Start { key, start, arg }));
    // SAFETY: the caller's arguments, with our trampoline and its leaked box.
    let rc = unsafe { real(thread, attr, trampoline, boxed.cast()) };
    if rc != 0 {
        // SAFETY: the thread was not created; the box is still ours.
        drop(unsafe { Box::from_raw(boxed) });
        sched::spawn_failed(key);
        return rc;
    }
    // SAFETY: `pthread_create` succeeded, so `*thread` is written.
    let id = unsafe { *thread };
    threads(|t| t.insert(id, key));
    sched::point(Op::Spawn, 0, site);
    0
}

/// # Safety
/// As `pthread_join`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_join(thread: libc::pthread_t, retval: *mut *mut c_void) -> c_int {
    let real =
        real!(pthread_join: unsafe extern "C" fn(libc::pthread_t, *mut *mut c_void) -> c_int);
    if let Some(key) = threads(|t| t.remove(&thread)) {
        sched::join(key, site());
    }
    // SAFETY: forwarded unchanged.
    unsafe { real(thread, retval) }
}

fn addr<T>(object: *mut T) -> usize {
    object as usize
}

/// # Safety
/// As `pthread_mutex_lock`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_mutex_lock(mutex: *mut libc::pthread_mutex_t) -> c_int {
    if sched::acquire(addr(mutex), Op::Lock, site()) {
        return 0;
    }
    let real = real!(pthread_mutex_lock: unsafe extern "C" fn(*mut libc::pthread_mutex_t) -> c_int);
    // SAFETY: forwarded unchanged.
    unsafe { real(mutex) }
}

/// # Safety
/// As `pthread_mutex_trylock`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_mutex_trylock(mutex: *mut libc::pthread_mutex_t) -> c_int {
    match sched::try_acquire(addr(mutex), Op::Lock, site()) {
        Some(true) => 0,
        Some(false) => libc::EBUSY,
        None => {
            let real = real!(pthread_mutex_trylock: unsafe extern "C" fn(*mut libc::pthread_mutex_t) -> c_int);
            // SAFETY: forwarded unchanged.
            unsafe { real(mutex) }
        }
    }
}

/// # Safety
/// As `pthread_mutex_unlock`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_mutex_unlock(mutex: *mut libc::pthread_mutex_t) -> c_int {
    if sched::release(addr(mutex), Op::Unlock, site()) {
        return 0;
    }
    let real =
        real!(pthread_mutex_unlock: unsafe extern "C" fn(*mut libc::pthread_mutex_t) -> c_int);
    // SAFETY: forwarded unchanged.
    unsafe { real(mutex) }
}

/// # Safety
/// As `pthread_cond_wait`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_cond_wait(
    cond: *mut libc::pthread_cond_t,
    mutex: *mut libc::pthread_mutex_t,
) -> c_int {
    if sched::wait(addr(cond), addr(mutex), false, site()).is_some() {
        return 0;
    }
    let real = real!(pthread_cond_wait: unsafe extern "C" fn(*mut libc::pthread_cond_t, *mut libc::pthread_mutex_t) -> c_int);
    // SAFETY: forwarded unchanged.
    unsafe { real(cond, mutex) }
}

/// Under control the wait times out only when no other thread can run.
///
/// # Safety
/// As `pthread_cond_timedwait`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_cond_timedwait(
    cond: *mut libc::pthread_cond_t,
    mutex: *mut libc::pthread_mutex_t,
    abstime: *const libc::timespec,
) -> c_int {
    match sched::wait(addr(cond), addr(mutex), true, site()) {
        Some(true) => libc::ETIMEDOUT,
        Some(false) => 0,
        None => {
            let real = real!(pthread_cond_timedwait: unsafe extern "C" fn(*mut libc::pthread_cond_t, *mut libc::pthread_mutex_t, *const libc::timespec) -> c_int);
            // SAFETY: forwarded unchanged.
            unsafe { real(cond, mutex, abstime) }
        }
    }
}

/// # Safety
/// As `pthread_cond_signal`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_cond_signal(cond: *mut libc::pthread_cond_t) -> c_int {
    if sched::notify(addr(cond), false, site()) {
        return 0;
    }
    let real = real!(pthread_cond_signal: unsafe extern "C" fn(*mut libc::pthread_cond_t) -> c_int);
    // SAFETY: forwarded unchanged.
    unsafe { real(cond) }
}

/// # Safety
/// As `pthread_cond_broadcast`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_cond_broadcast(cond: *mut libc::pthread_cond_t) -> c_int {
    if sched::notify(addr(cond), true, site()) {
        return 0;
    }
    let real =
        real!(pthread_cond_broadcast: unsafe extern "C" fn(*mut libc::pthread_cond_t) -> c_int);
    // SAFETY: forwarded unchanged.
    unsafe { real(cond) }
}

/// # Safety
/// As `pthread_rwlock_rdlock`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_rwlock_rdlock(lock: *mut libc::pthread_rwlock_t) -> c_int {
    if sched::acquire(addr(lock), Op::Read, site()) {
        return 0;
    }
    let real =
        real!(pthread_rwlock_rdlock: unsafe extern "C" fn(*mut libc::pthread_rwlock_t) -> c_int);
    // SAFETY: forwarded unchanged.
    unsafe { real(lock) }
}

/// # Safety
/// As `pthread_rwlock_wrlock`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_rwlock_wrlock(lock: *mut libc::pthread_rwlock_t) -> c_int {
    if sched::acquire(addr(lock), Op::Lock, site()) {
        return 0;
    }
    let real =
        real!(pthread_rwlock_wrlock: unsafe extern "C" fn(*mut libc::pthread_rwlock_t) -> c_int);
    // SAFETY: forwarded unchanged.
    unsafe { real(lock) }
}

/// # Safety
/// As `pthread_rwlock_tryrdlock`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_rwlock_tryrdlock(lock: *mut libc::pthread_rwlock_t) -> c_int {
    match sched::try_acquire(addr(lock), Op::Read, site()) {
        Some(true) => 0,
        Some(false) => libc::EBUSY,
        None => {
            let real = real!(pthread_rwlock_tryrdlock: unsafe extern "C" fn(*mut libc::pthread_rwlock_t) -> c_int);
            // SAFETY: forwarded unchanged.
            unsafe { real(lock) }
        }
    }
}

/// # Safety
/// As `pthread_rwlock_trywrlock`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_rwlock_trywrlock(lock: *mut libc::pthread_rwlock_t) -> c_int {
    match sched::try_acquire(addr(lock), Op::Lock, site()) {
        Some(true) => 0,
        Some(false) => libc::EBUSY,
        None => {
            let real = real!(pthread_rwlock_trywrlock: unsafe extern "C" fn(*mut libc::pthread_rwlock_t) -> c_int);
            // SAFETY: forwarded unchanged.
            unsafe { real(lock) }
        }
    }
}

/// # Safety
/// As `pthread_rwlock_unlock`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn pthread_rwlock_unlock(lock: *mut libc::pthread_rwlock_t) -> c_int {
    if sched::release_either(addr(lock), site()) {
        return 0;
    }
    let real =
        real!(pthread_rwlock_unlock: unsafe extern "C" fn(*mut libc::pthread_rwlock_t) -> c_int);
    // SAFETY: forwarded unchanged.
    unsafe { real(lock) }
}

#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub extern "C" fn sched_yield() -> c_int {
    if sched::active() && sched::point(Op::Yield, 0, site()) {
        return 0;
    }
    let real = real!(sched_yield: unsafe extern "C" fn() -> c_int);
    // SAFETY: no arguments.
    unsafe { real() }
}

/// Under control (once the run has controlled threads) a sleep is a
/// yield: no real time passes. A program without threads sleeps.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub extern "C" fn usleep(usec: c_uint) -> c_int {
    if sched::active() && sched::point(Op::Sleep, 0, site()) {
        return 0;
    }
    let real = real!(usleep: unsafe extern "C" fn(c_uint) -> c_int);
    // SAFETY: forwarded unchanged.
    unsafe { real(usec) }
}

/// # Safety
/// As `nanosleep`.
#[cfg_attr(feature = "interpose", unsafe(no_mangle))]
pub unsafe extern "C" fn nanosleep(req: *const libc::timespec, rem: *mut libc::timespec) -> c_int {
    if sched::active() && sched::point(Op::Sleep, 0, site()) {
        return 0;
    }
    let real =
        real!(nanosleep: unsafe extern "C" fn(*const libc::timespec, *mut libc::timespec) -> c_int);
    // SAFETY: forwarded unchanged.
    unsafe { real(req, rem) }
}

/// A scheduling point whose nominal choice is another runnable thread.
#[unsafe(no_mangle)]
pub extern "C" fn dst_yield() {
    if !sched::point(Op::Yield, 0, site()) {
        std::thread::yield_now();
    }
}

fn atomic<'a>(ptr: *mut u64) -> &'a AtomicU64 {
    // SAFETY: the caller's contract: `ptr` is a valid, aligned `uint64_t`
    // accessed only atomically while shared.
    unsafe { AtomicU64::from_ptr(ptr) }
}

/// # Safety
/// `ptr` must be a valid, 8-aligned `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_atomic_load_u64(ptr: *mut u64) -> u64 {
    sched::access(addr(ptr), Op::Load, site());
    atomic(ptr).load(Ordering::SeqCst)
}

/// # Safety
/// `ptr` must be a valid, 8-aligned `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_atomic_store_u64(ptr: *mut u64, value: u64) {
    sched::access(addr(ptr), Op::Store, site());
    atomic(ptr).store(value, Ordering::SeqCst)
}

/// # Safety
/// `ptr` must be a valid, 8-aligned `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_atomic_fetch_add_u64(ptr: *mut u64, delta: u64) -> u64 {
    sched::access(addr(ptr), Op::Rmw, site());
    atomic(ptr).fetch_add(delta, Ordering::SeqCst)
}

/// Compare-and-swap: stores `desired` if `*ptr == *expected` and returns 1;
/// otherwise writes the current value to `*expected` and returns 0.
///
/// # Safety
/// `ptr` must be a valid, 8-aligned `uint64_t`; `expected` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dst_atomic_cas_u64(
    ptr: *mut u64,
    expected: *mut u64,
    desired: u64,
) -> c_int {
    sched::access(addr(ptr), Op::Rmw, site());
    // SAFETY: the caller's contract.
    let current = unsafe { *expected };
    match atomic(ptr).compare_exchange(current, desired, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => 1,
        Err(seen) => {
            // SAFETY: as above.
            unsafe { *expected = seen };
            0
        }
    }
}
