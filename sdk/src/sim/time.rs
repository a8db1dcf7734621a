//! Virtual time: it advances only when every task waits, and then jumps to
//! the next timer or message. Each node reads it with its own clock skew;
//! its realtime clock starts at the world's epoch ([`crate::world::clock`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::world::{Event, try_with, with};

/// A point in a node's virtual time: nanoseconds since the simulation
/// started, plus the node's clock skew (so it may be negative).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(i64);

impl Instant {
    /// Nanoseconds since the simulation started, on this node's clock.
    pub fn as_nanos(self) -> i64 {
        self.0
    }

    /// Time passed since `earlier` (zero if `earlier` is later).
    pub fn duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0).max(0) as u64)
    }

    /// Time passed since `self`, on the current node's clock.
    pub fn elapsed(self) -> Duration {
        now().duration_since(self)
    }
}

impl std::ops::Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(nanos(d).min(i64::MAX as u64) as i64))
    }
}

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The current node's clock: global virtual time plus its skew.
pub fn now() -> Instant {
    with(|w| {
        let skew = w.current.map_or(0, |node| w.nodes[node.index()].skew);
        Instant((w.now as i64).saturating_add(skew))
    })
}

/// The current node's realtime clock: the world's epoch
/// ([`EPOCH_NS`](crate::world::clock::EPOCH_NS), 2024-01-01T00:00:00Z, where
/// every level's realtime clock starts) plus virtual time and the node's
/// skew.
pub fn system_now() -> std::time::SystemTime {
    let since_epoch = (crate::world::clock::EPOCH_NS as i64).saturating_add(now().as_nanos());
    std::time::UNIX_EPOCH + Duration::from_nanos(since_epoch.max(0) as u64)
}

/// Global virtual time, without any node's skew (for histories and logs).
pub fn global_now() -> Duration {
    with(|w| Duration::from_nanos(w.now))
}

/// A future that completes once `duration` of virtual time has passed.
pub fn sleep(duration: Duration) -> Sleep {
    let deadline = with(|w| w.now.saturating_add(nanos(duration)));
    Sleep {
        deadline,
        key: None,
    }
}

/// A future that completes at `instant` on the current node's clock.
pub fn sleep_until(instant: Instant) -> Sleep {
    let deadline = with(|w| {
        let skew = w.current.map_or(0, |node| w.nodes[node.index()].skew);
        instant.0.saturating_sub(skew).max(0) as u64
    });
    Sleep {
        deadline,
        key: None,
    }
}

/// See [`sleep`].
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: u64,
    key: Option<(u64, u64)>,
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = self.deadline;
        let key = self.key;
        let (done, key) = with(|w| {
            if w.now >= deadline {
                if let Some(key) = key {
                    w.events.remove(&key);
                }
                return (true, None);
            }
            match key.and_then(|k| w.events.get_mut(&k)) {
                Some(Event::Wake(waker)) => {
                    waker.clone_from(cx.waker());
                    (false, key)
                }
                _ => (
                    false,
                    Some(w.schedule(deadline, Event::Wake(cx.waker().clone()))),
                ),
            }
        });
        self.key = key;
        if done { Poll::Ready(()) } else { Poll::Pending }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            try_with(|w| w.events.remove(&key));
        }
    }
}

/// `future` did not finish in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// Runs `future` for at most `duration` of virtual time.
pub async fn timeout<F: Future>(duration: Duration, future: F) -> Result<F::Output, Elapsed> {
    match super::select(future, sleep(duration)).await {
        super::Either::Left(v) => Ok(v),
        super::Either::Right(()) => Err(Elapsed),
    }
}

/// Ticks every `period`, the first tick at once.
pub fn interval(period: Duration) -> Interval {
    Interval {
        next: with(|w| w.now),
        period: nanos(period).max(1),
    }
}

/// See [`interval`]. Missed ticks are skipped, not bunched.
pub struct Interval {
    next: u64,
    period: u64,
}

impl Interval {
    /// Waits for the next tick.
    pub async fn tick(&mut self) -> Instant {
        let at = self.next;
        Sleep {
            deadline: at,
            key: None,
        }
        .await;
        let now = with(|w| w.now);
        self.next = at + self.period * (1 + (now - at) / self.period);
        super::time::now()
    }
}
