//! One-time initialization, as std's: [`Once`], [`OnceLock`] and
//! [`LazyLock`], built on the controlled [`Mutex`] and atomics, so that the
//! race to initialize is explored (which thread runs the initializer, who
//! waits, who reads the value first).

use std::cell::UnsafeCell;
use std::fmt;
use std::mem::MaybeUninit;
use std::ops::Deref;

use super::Mutex;
use super::atomic::{AtomicU8, Ordering};

const INCOMPLETE: u8 = 0;
const POISONED: u8 = 1;
const COMPLETE: u8 = 2;

/// A one-time initialization, as `std::sync::Once`: an initializer that
/// panics poisons it (later [`Once::call_once`] calls panic;
/// [`Once::call_once_force`] runs again and is told).
pub struct Once {
    state: AtomicU8,
    lock: Mutex<()>,
}

/// What [`Once::call_once_force`]'s closure is told, as
/// `std::sync::OnceState`.
#[derive(Debug)]
pub struct OnceState {
    poisoned: bool,
}

impl OnceState {
    /// Whether an earlier initializer panicked.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }
}

/// Marks its `Once` poisoned if dropped while the initializer unwinds.
struct PoisonOnUnwind<'a>(&'a Once);

impl Drop for PoisonOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.state.store(POISONED, Ordering::Release);
        }
    }
}

impl Default for Once {
    fn default() -> Self {
        Once::new()
    }
}

impl fmt::Debug for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Once").finish_non_exhaustive()
    }
}

impl Once {
    pub const fn new() -> Once {
        Once {
            state: AtomicU8::new(INCOMPLETE),
            lock: Mutex::new(()),
        }
    }

    /// Runs `f` if no call has completed yet; other callers wait for it.
    /// Panics if an earlier initializer panicked.
    #[track_caller]
    pub fn call_once<F: FnOnce()>(&self, f: F) {
        self.run(false, |_| f());
    }

    /// As [`Once::call_once`], but also runs after an initializer panicked
    /// (`f` is told so); completing clears the poison.
    #[track_caller]
    pub fn call_once_force<F: FnOnce(&OnceState)>(&self, f: F) {
        self.run(true, f);
    }

    /// Whether a call completed.
    #[track_caller]
    pub fn is_completed(&self) -> bool {
        self.state.load(Ordering::Acquire) == COMPLETE
    }

    #[track_caller]
    fn run<F: FnOnce(&OnceState)>(&self, force: bool, f: F) {
        if self.is_completed() {
            return;
        }
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let poisoned = match self.state.load(Ordering::Acquire) {
            COMPLETE => return,
            POISONED if !force => panic!("Once instance has previously been poisoned"),
            state => state == POISONED,
        };
        let unwinding = PoisonOnUnwind(self);
        f(&OnceState { poisoned });
        std::mem::forget(unwinding);
        self.state.store(COMPLETE, Ordering::Release);
    }
}

/// A cell written once, as `std::sync::OnceLock`: the first
/// [`OnceLock::get_or_init`] (or [`OnceLock::set`]) runs while the others
/// wait, then everyone reads the value.
pub struct OnceLock<T> {
    once: Once,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value is written once, by the thread that holds `once`'s
// lock, and read only after `once` completed (Acquire after Release), so
// sharing the cell shares `&T` (needs `T: Sync`) and can move a `T` into
// the cell from another thread (needs `T: Send`), as std's `OnceLock`.
unsafe impl<T: Sync + Send> Sync for OnceLock<T> {}
// SAFETY: moving the cell moves its `T`.
unsafe impl<T: Send> Send for OnceLock<T> {}

impl<T> OnceLock<T> {
    pub const fn new() -> OnceLock<T> {
        OnceLock {
            once: Once::new(),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// The value, if initialized.
    #[track_caller]
    pub fn get(&self) -> Option<&T> {
        if self.once.is_completed() {
            // SAFETY: completed: the value was written and is never
            // written again while `&self` lives.
            Some(unsafe { (*self.value.get()).assume_init_ref() })
        } else {
            None
        }
    }

    /// The value, if initialized, mutably.
    pub fn get_mut(&mut self) -> Option<&mut T> {
        if self.completed_mut() {
            // SAFETY: completed: the value was written; `&mut self` is
            // exclusive.
            Some(unsafe { self.value.get_mut().assume_init_mut() })
        } else {
            None
        }
    }

    /// Initializes the cell with `value` unless it was: `Err(value)` then.
    #[track_caller]
    pub fn set(&self, value: T) -> Result<(), T> {
        let mut value = Some(value);
        self.get_or_init(|| value.take().expect("taken once"));
        match value {
            None => Ok(()),
            Some(value) => Err(value),
        }
    }

    /// The value, initialized by `f` if no one has yet. If `f` panics the
    /// cell stays empty and the next caller initializes it.
    #[track_caller]
    pub fn get_or_init<F: FnOnce() -> T>(&self, f: F) -> &T {
        if let Some(value) = self.get() {
            return value;
        }
        self.once.call_once_force(|_| {
            let value = f();
            // SAFETY: `once`'s lock is held and it has not completed: no
            // other thread reads or writes the value now.
            unsafe { (*self.value.get()).write(value) };
        });
        // SAFETY: `call_once_force` returned: the value is written.
        unsafe { (*self.value.get()).assume_init_ref() }
    }

    /// The value, if initialized, by value.
    pub fn into_inner(mut self) -> Option<T> {
        self.take()
    }

    /// Takes the value out, leaving the cell empty.
    pub fn take(&mut self) -> Option<T> {
        if !self.completed_mut() {
            return None;
        }
        *self.once.state.get_mut() = INCOMPLETE;
        // SAFETY: it was complete, so written; marked empty above, so it is
        // read out once.
        Some(unsafe { self.value.get_mut().assume_init_read() })
    }

    fn completed_mut(&mut self) -> bool {
        *self.once.state.get_mut() == COMPLETE
    }
}

impl<T> Drop for OnceLock<T> {
    fn drop(&mut self) {
        if self.completed_mut() {
            // SAFETY: completed, so written, and dropped once.
            unsafe { self.value.get_mut().assume_init_drop() };
        }
    }
}

impl<T> Default for OnceLock<T> {
    fn default() -> Self {
        OnceLock::new()
    }
}

impl<T> From<T> for OnceLock<T> {
    fn from(value: T) -> Self {
        let cell = OnceLock::new();
        // A fresh cell: `set` cannot fail.
        let _ = cell.set(value);
        cell
    }
}

impl<T: fmt::Debug> fmt::Debug for OnceLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_tuple("OnceLock");
        match self.get() {
            Some(v) => d.field(v),
            None => d.field(&format_args!("<uninit>")),
        };
        d.finish()
    }
}

impl<T: Clone> Clone for OnceLock<T> {
    fn clone(&self) -> Self {
        match self.get() {
            Some(value) => OnceLock::from(value.clone()),
            None => OnceLock::new(),
        }
    }
}

impl<T: PartialEq> PartialEq for OnceLock<T> {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl<T: Eq> Eq for OnceLock<T> {}

/// A value initialized on first use, as `std::sync::LazyLock`. If the
/// initializer panics, later uses panic too (it is gone), as std's.
pub struct LazyLock<T, F = fn() -> T> {
    cell: OnceLock<T>,
    init: UnsafeCell<Option<F>>,
}

// SAFETY: `init` is taken once, by the thread that holds the cell's lock
// (so it needs `F: Send`); the value is shared as `OnceLock`'s.
unsafe impl<T: Sync + Send, F: Send> Sync for LazyLock<T, F> {}

impl<T, F: FnOnce() -> T> LazyLock<T, F> {
    pub const fn new(f: F) -> LazyLock<T, F> {
        LazyLock {
            cell: OnceLock::new(),
            init: UnsafeCell::new(Some(f)),
        }
    }

    /// The value, initialized now if it was not.
    #[track_caller]
    pub fn force(this: &LazyLock<T, F>) -> &T {
        this.cell.get_or_init(|| {
            // SAFETY: inside the cell's one-time initialization: no other
            // thread touches `init` now.
            let init = unsafe { (*this.init.get()).take() };
            match init {
                Some(f) => f(),
                None => panic!("LazyLock instance has previously been poisoned"),
            }
        })
    }
}

impl<T, F: FnOnce() -> T> Deref for LazyLock<T, F> {
    type Target = T;

    #[track_caller]
    fn deref(&self) -> &T {
        LazyLock::force(self)
    }
}

impl<T: Default> Default for LazyLock<T> {
    fn default() -> Self {
        LazyLock::new(T::default)
    }
}

impl<T: fmt::Debug, F> fmt::Debug for LazyLock<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_tuple("LazyLock");
        match self.cell.get() {
            Some(v) => d.field(v),
            None => d.field(&format_args!("<uninit>")),
        };
        d.finish()
    }
}
