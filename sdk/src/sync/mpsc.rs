//! Channels, as `std::sync::mpsc`, built on the controlled [`Mutex`] and
//! [`Condvar`]: each send and receive is a scheduling point under control.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use std::sync::mpsc::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};

use super::{Condvar, Mutex, MutexGuard};

struct State<T> {
    queue: VecDeque<T>,
    senders: usize,
    receiver: bool,
    /// `Some(n)` for a bounded channel of capacity `n` (0: a rendezvous,
    /// whose one message in flight is handed over while its sender waits).
    bound: Option<usize>,
    /// Messages sent and taken so far (a rendezvous sender waits until its
    /// own is taken).
    sent: u64,
    taken: u64,
    /// Receivers waiting for a message (a rendezvous `try_send` succeeds
    /// only into a waiting receiver).
    receiving: usize,
}

impl<T> State<T> {
    /// Whether a bounded channel has room for one more message.
    fn room(&self) -> bool {
        self.queue.len() < self.bound.map_or(usize::MAX, |b| b.max(1))
    }

    fn rendezvous(&self) -> bool {
        self.bound == Some(0)
    }

    /// Takes the oldest message, if any.
    fn take(&mut self) -> Option<T> {
        let value = self.queue.pop_front()?;
        self.taken += 1;
        Some(value)
    }
}

struct Chan<T> {
    state: Mutex<State<T>>,
    /// Signalled when a message arrives or the last sender leaves.
    readable: Condvar,
    /// Signalled when a message leaves a bounded channel or the receiver does.
    writable: Condvar,
}

impl<T> Chan<T> {
    #[track_caller]
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A message was taken: wakes a sender waiting for room (every one of
    /// a rendezvous, where one of them waits for this very message).
    #[track_caller]
    fn taken(&self, state: MutexGuard<'_, State<T>>) {
        let rendezvous = state.rendezvous();
        drop(state);
        if rendezvous {
            self.writable.notify_all();
        } else {
            self.writable.notify_one();
        }
    }
}

/// The sending half of an unbounded channel.
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

/// The sending half of a bounded channel: sends wait while it is full.
pub struct SyncSender<T> {
    chan: Arc<Chan<T>>,
}

/// The receiving half of a channel.
pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
}

fn new<T>(bound: Option<usize>) -> Arc<Chan<T>> {
    Arc::new(Chan {
        state: Mutex::new(State {
            queue: VecDeque::new(),
            senders: 1,
            receiver: true,
            bound,
            sent: 0,
            taken: 0,
            receiving: 0,
        }),
        readable: Condvar::new(),
        writable: Condvar::new(),
    })
}

/// An unbounded channel, as `std::sync::mpsc::channel`.
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let chan = new(None);
    (Sender { chan: chan.clone() }, Receiver { chan })
}

/// A bounded channel, as `std::sync::mpsc::sync_channel`; a bound of 0 is
/// a rendezvous: each send returns once a receiver took its message.
pub fn sync_channel<T>(bound: usize) -> (SyncSender<T>, Receiver<T>) {
    let chan = new(Some(bound));
    (SyncSender { chan: chan.clone() }, Receiver { chan })
}

impl<T> Sender<T> {
    #[track_caller]
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        let mut state = self.chan.lock();
        if !state.receiver {
            return Err(SendError(value));
        }
        state.queue.push_back(value);
        drop(state);
        self.chan.readable.notify_one();
        Ok(())
    }
}

impl<T> SyncSender<T> {
    #[track_caller]
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        let mut state = self.chan.lock();
        loop {
            if !state.receiver {
                return Err(SendError(value));
            }
            if state.room() {
                break;
            }
            state = self
                .chan
                .writable
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        }
        state.queue.push_back(value);
        state.sent += 1;
        let ticket = state.sent;
        let rendezvous = state.rendezvous();
        drop(state);
        self.chan.readable.notify_one();
        if !rendezvous {
            return Ok(());
        }
        let mut state = self.chan.lock();
        while state.taken < ticket {
            if !state.receiver {
                // Never taken: the one message in flight is this one.
                debug_assert_eq!(state.queue.len(), 1);
                let value = state.queue.pop_back().expect("in flight");
                return Err(SendError(value));
            }
            state = self
                .chan
                .writable
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        }
        Ok(())
    }

    #[track_caller]
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        let mut state = self.chan.lock();
        if !state.receiver {
            return Err(TrySendError::Disconnected(value));
        }
        let handed = state.receiving > state.queue.len();
        if !state.room() || (state.rendezvous() && !handed) {
            return Err(TrySendError::Full(value));
        }
        state.queue.push_back(value);
        state.sent += 1;
        drop(state);
        self.chan.readable.notify_one();
        Ok(())
    }
}

macro_rules! sender_common {
    ($name:ident) => {
        impl<T> Clone for $name<T> {
            fn clone(&self) -> Self {
                self.chan.lock().senders += 1;
                $name {
                    chan: self.chan.clone(),
                }
            }
        }

        impl<T> Drop for $name<T> {
            fn drop(&mut self) {
                let mut state = self.chan.lock();
                state.senders -= 1;
                let last = state.senders == 0;
                drop(state);
                if last {
                    self.chan.readable.notify_all();
                }
            }
        }

        impl<T> std::fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        }
    };
}

sender_common!(Sender);
sender_common!(SyncSender);

impl<T> Receiver<T> {
    /// Waits for a message; fails once every sender is gone and the
    /// channel is empty.
    #[track_caller]
    pub fn recv(&self) -> Result<T, RecvError> {
        self.receive(None).map_err(|_| RecvError)
    }

    #[track_caller]
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        let mut state = self.chan.lock();
        match state.take() {
            Some(value) => {
                self.chan.taken(state);
                Ok(value)
            }
            None if state.senders == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    /// Waits for a message up to `timeout` (under control: until nothing
    /// else can run).
    #[track_caller]
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.receive(Some(timeout))
    }

    #[track_caller]
    fn receive(&self, timeout: Option<Duration>) -> Result<T, RecvTimeoutError> {
        let start = Instant::now();
        let mut state = self.chan.lock();
        loop {
            if let Some(value) = state.take() {
                self.chan.taken(state);
                return Ok(value);
            }
            if state.senders == 0 {
                return Err(RecvTimeoutError::Disconnected);
            }
            state.receiving += 1;
            let Some(timeout) = timeout else {
                state = self
                    .chan
                    .readable
                    .wait(state)
                    .unwrap_or_else(|p| p.into_inner());
                state.receiving -= 1;
                continue;
            };
            let left = timeout.saturating_sub(start.elapsed());
            let (next, result) = self
                .chan
                .readable
                .wait_timeout(state, left)
                .unwrap_or_else(|p| p.into_inner());
            state = next;
            state.receiving -= 1;
            if result.timed_out() && state.queue.is_empty() {
                return Err(RecvTimeoutError::Timeout);
            }
        }
    }

    /// Messages until every sender is gone.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(move || self.recv().ok())
    }

    /// The messages waiting now.
    pub fn try_iter(&self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(move || self.try_recv().ok())
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.chan.lock().receiver = false;
        self.chan.writable.notify_all();
    }
}

impl<T> std::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
    }
}

/// The messages of a channel until every sender is gone.
#[derive(Debug)]
pub struct IntoIter<T> {
    receiver: Receiver<T>,
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.receiver.recv().ok()
    }
}

impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    fn into_iter(self) -> IntoIter<T> {
        IntoIter { receiver: self }
    }
}
