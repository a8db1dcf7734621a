//! The timer that stops a spinning guest: a thread that, when a run
//! outlives its deadline, sets the vCPU's `immediate_exit` and signals the
//! thread in KVM_RUN, which then returns EINTR (KVM's documented way to
//! kick a vCPU out without a race: a signal that arrives just before
//! KVM_RUN is caught by `immediate_exit`). Disarming clears both under
//! the lock, so a late firing never ends the next run.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The signal that kicks the vCPU out (its handler does nothing: the
/// point is the interrupted system call).
fn kick_signal() -> libc::c_int {
    libc::SIGRTMIN() + 4
}

extern "C" fn ignore(_: libc::c_int) {}

fn install_handler() {
    static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    INSTALLED.get_or_init(|| {
        // SAFETY: a handler that does nothing, installed without
        // SA_RESTART so that KVM_RUN returns EINTR.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = ignore as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(kick_signal(), &action, std::ptr::null_mut());
        }
    });
}

#[derive(Default)]
struct State {
    /// The run's deadline and the thread in KVM_RUN.
    armed: Option<(Instant, libc::pthread_t)>,
    /// The vCPU's `immediate_exit` byte (an address in its kvm_run
    /// mapping).
    byte: usize,
    fired: bool,
    quit: bool,
}

/// The timer of one vCPU (see the module docs).
pub struct Watchdog {
    shared: Arc<(Mutex<State>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
    byte: *mut u8,
}

impl Watchdog {
    /// A watchdog for the vCPU whose `immediate_exit` byte is at `byte`.
    ///
    /// # Safety
    /// `byte` must stay valid (the vCPU's kvm_run mapping alive) for as
    /// long as runs are armed: from each [`Watchdog::arm`] to the
    /// [`Watchdog::disarm`] after it.
    pub unsafe fn new(byte: *mut u8) -> Watchdog {
        install_handler();
        let shared: Arc<(Mutex<State>, Condvar)> = Arc::new((
            Mutex::new(State {
                byte: byte as usize,
                ..State::default()
            }),
            Condvar::new(),
        ));
        let theirs = shared.clone();
        let thread = std::thread::Builder::new()
            .name("dst-kvm-watchdog".into())
            .spawn(move || watch(&theirs))
            .expect("spawn the KVM watchdog thread");
        Watchdog {
            shared,
            thread: Some(thread),
            byte,
        }
    }

    /// Arms the timer for a run on this thread.
    pub fn arm(&self, timeout: Duration) {
        let (lock, wake) = &*self.shared;
        let mut state = lock.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() };
        state.armed = Some((Instant::now() + timeout, me));
        state.fired = false;
        wake.notify_one();
    }

    /// Disarms it; returns whether it fired during the run.
    pub fn disarm(&self) -> bool {
        let (lock, _) = &*self.shared;
        let mut state = lock.lock().unwrap_or_else(|p| p.into_inner());
        state.armed = None;
        // SAFETY: valid while armed (`new`'s contract), and we are ending
        // an armed run; the watchdog writes it only under this lock.
        unsafe { self.byte.write_volatile(0) };
        std::mem::take(&mut state.fired)
    }
}

impl Watchdog {
    /// Clears `immediate_exit` after the caller set it itself (to complete
    /// a pending I/O without running the guest), unless the watchdog fired
    /// meanwhile: its kick must not be lost.
    pub fn clear_unless_fired(&self) {
        let (lock, _) = &*self.shared;
        let state = lock.lock().unwrap_or_else(|p| p.into_inner());
        if !state.fired {
            // SAFETY: as in `disarm`: the byte is valid while the vCPU is,
            // and the watchdog writes it only under this lock.
            unsafe { self.byte.write_volatile(0) };
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        {
            let (lock, wake) = &*self.shared;
            lock.lock().unwrap_or_else(|p| p.into_inner()).quit = true;
            wake.notify_one();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn watch(shared: &(Mutex<State>, Condvar)) {
    let (lock, wake) = shared;
    let mut state = lock.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if state.quit {
            return;
        }
        match state.armed {
            None => state = wake.wait(state).unwrap_or_else(|p| p.into_inner()),
            Some((deadline, thread)) => {
                let now = Instant::now();
                if now < deadline {
                    state = wake
                        .wait_timeout(state, deadline - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    continue;
                }
                // SAFETY: armed means the vCPU (and its kvm_run mapping)
                // is in use by `thread` until it disarms under this lock.
                unsafe { (state.byte as *mut u8).write_volatile(1) };
                // SAFETY: `thread` is alive (it has not disarmed yet); the
                // signal's handler does nothing.
                unsafe { libc::pthread_kill(thread, kick_signal()) };
                state.fired = true;
                state.armed = None;
            }
        }
    }
}
