//! The rest of std's synchronization surface under control: `OnceLock`,
//! `LazyLock`, `Once` with poisoning and `call_once_force`, the rendezvous
//! channel (`sync_channel(0)`), condition variables' spurious wakeups (a
//! decision) and `RwLockWriteGuard::downgrade`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use dst::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use dst::sync::mpsc::{TrySendError, sync_channel};
use dst::sync::{Condvar, LazyLock, Mutex, Once, OnceLock, RwLock, RwLockWriteGuard};
use dst::thread;
use dst_executors::{Executor, InProcess};
use dst_kernel::{Outcome, RunRecord, Signature};

fn property(message: &str) -> Option<Signature> {
    Some(Signature::Property {
        message: message.into(),
    })
}

/// Runs `body` under control for inputs 0..n; every run must pass.
fn clean(n: u64, body: fn()) -> Vec<RunRecord> {
    let mut exec = InProcess::new(body);
    (0..n)
        .map(|seed| {
            let record = exec.run(&seed.to_le_bytes());
            assert!(
                matches!(record.outcome, Outcome::Pass) && record.signature().is_none(),
                "seed {seed}: {:?} {:?}",
                record.outcome,
                record.signature()
            );
            record
        })
        .collect()
}

/// Some run had the spawned thread initialize the cell.
static SPAWNED_WON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[test]
fn once_lock_runs_one_initializer_and_its_race_is_explored() {
    clean(300, || {
        let cell = Arc::new(OnceLock::new());
        let inits = Arc::new(AtomicU64::new(0));
        let handles: Vec<_> = (1..=3u64)
            .map(|i| {
                let (cell, inits) = (cell.clone(), inits.clone());
                thread::spawn(move || {
                    *cell.get_or_init(|| {
                        inits.fetch_add(1, SeqCst);
                        i
                    })
                })
            })
            .collect();
        let set = cell.set(0);
        let seen: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let value = *cell.get().unwrap();
        dst::assert_always!(inits.load(SeqCst) <= 1, "one initializer runs");
        dst::assert_always!(
            seen.iter().all(|&v| v == value),
            "every thread sees the one value"
        );
        dst::assert_always!(set.is_ok() == (value == 0), "set wins only an empty cell");
    });
    // Not only the nominal winner: the inputs reach other orders.
    let mut exec = InProcess::new(|| {
        let cell = Arc::new(OnceLock::new());
        let c = cell.clone();
        let t = thread::spawn(move || *c.get_or_init(|| 1u64));
        if *cell.get_or_init(|| 0u64) == 1 {
            SPAWNED_WON.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        t.join().unwrap();
    });
    exec.run(&[]);
    assert!(
        !SPAWNED_WON.load(std::sync::atomic::Ordering::Relaxed),
        "main wins nominally"
    );
    for seed in 0..200u64 {
        exec.run(&seed.to_le_bytes());
    }
    assert!(
        SPAWNED_WON.load(std::sync::atomic::Ordering::Relaxed),
        "some input lets the spawned thread initialize first"
    );
}

#[test]
fn once_lock_outside_control_is_std_like() {
    let cell: OnceLock<String> = OnceLock::new();
    assert!(cell.get().is_none());
    assert_eq!(cell.get_or_init(|| "a".into()), "a");
    assert_eq!(cell.set("b".into()), Err("b".into()));
    // A panicking initializer leaves the cell empty for the next caller.
    let empty: OnceLock<u32> = OnceLock::new();
    let panicked = catch_unwind(AssertUnwindSafe(|| empty.get_or_init(|| panic!("no"))));
    assert!(panicked.is_err());
    assert_eq!(*empty.get_or_init(|| 7), 7);
    let mut taken = OnceLock::from(5u32);
    assert_eq!(taken.take(), Some(5));
    assert!(taken.get().is_none());
    assert_eq!(format!("{:?}", OnceLock::from(3u8)), "OnceLock(3)");
}

static LAZY: LazyLock<Vec<u32>> = LazyLock::new(|| vec![1, 2, 3]);

#[test]
fn lazy_lock_initializes_once_and_poisons_on_panic() {
    assert_eq!(LAZY.len(), 3);
    clean(300, || {
        let inits = Arc::new(AtomicU64::new(0));
        let i = inits.clone();
        let lazy = Arc::new(LazyLock::new(move || {
            i.fetch_add(1, SeqCst);
            42u64
        }));
        let l = lazy.clone();
        let t = thread::spawn(move || **l);
        let here = **lazy;
        let there = t.join().unwrap();
        dst::assert_always!(here == 42 && there == 42, "both see the value");
        dst::assert_always!(inits.load(SeqCst) == 1, "the initializer ran once");
    });
    let bad: LazyLock<u32> = LazyLock::new(|| panic!("init fails"));
    assert!(catch_unwind(AssertUnwindSafe(|| *bad)).is_err());
    let again = catch_unwind(AssertUnwindSafe(|| *bad)).unwrap_err();
    assert_eq!(
        again.downcast_ref::<&str>(),
        Some(&"LazyLock instance has previously been poisoned")
    );
}

#[test]
fn once_is_poisoned_by_a_panic_and_call_once_force_recovers() {
    let once = Once::new();
    assert!(catch_unwind(AssertUnwindSafe(|| once.call_once(|| panic!("first")))).is_err());
    assert!(!once.is_completed());
    assert!(catch_unwind(AssertUnwindSafe(|| once.call_once(|| {}))).is_err());
    let mut told = None;
    once.call_once_force(|state| told = Some(state.is_poisoned()));
    assert_eq!(told, Some(true));
    assert!(once.is_completed());
    once.call_once_force(|_| unreachable!("completed"));
    // Under control: racing callers run one initializer.
    clean(200, || {
        let once = Arc::new(Once::new());
        let runs = Arc::new(AtomicU64::new(0));
        let (o, r) = (once.clone(), runs.clone());
        let t = thread::spawn(move || {
            o.call_once(|| {
                r.fetch_add(1, SeqCst);
            })
        });
        once.call_once_force(|state| {
            dst::assert_always!(!state.is_poisoned(), "nothing panicked");
            runs.fetch_add(1, SeqCst);
        });
        t.join().unwrap();
        dst::assert_always!(runs.load(SeqCst) == 1, "one call runs");
    });
}

#[test]
fn a_zero_bound_channel_is_a_rendezvous() {
    // A send returns only once its message was taken.
    clean(300, || {
        let (tx, rx) = sync_channel::<u32>(0);
        let taken = Arc::new(AtomicU64::new(0));
        let t = taken.clone();
        let receiver = thread::spawn(move || {
            for i in 0..3 {
                let v = rx.recv().unwrap();
                dst::assert_always!(v == i, "messages arrive in order");
                t.fetch_add(1, SeqCst);
            }
        });
        for i in 0..3u32 {
            tx.send(i).unwrap();
            // This message was taken, so the previous ones were counted.
            dst::assert_always!(
                taken.load(SeqCst) >= u64::from(i),
                "send waits for its taker"
            );
        }
        receiver.join().unwrap();
    });
    // Nobody receives: the send never returns (with a bound of 1 it would).
    let mut exec = InProcess::new(|| {
        let (tx, _rx) = sync_channel::<u32>(0);
        let t = thread::spawn(move || tx.send(1).unwrap());
        t.join().unwrap();
    });
    assert_eq!(
        exec.run(&[]).signature(),
        property("dst: deadlock (every live thread is blocked)")
    );
    // try_send succeeds only into a waiting receiver.
    let (tx, rx) = sync_channel::<u32>(0);
    assert!(matches!(tx.try_send(1), Err(TrySendError::Full(1))));
    drop(rx);
    assert!(matches!(tx.try_send(2), Err(TrySendError::Disconnected(2))));
    // The receiver leaves before taking: the send fails with its message.
    let (tx, rx) = sync_channel::<u32>(0);
    let t = std::thread::spawn(move || tx.send(9));
    std::thread::sleep(std::time::Duration::from_millis(20));
    drop(rx);
    assert_eq!(t.join().unwrap().unwrap_err().0, 9);
}

/// Waits once for a flag without re-checking it: wrong under spurious
/// wakeups, which the inputs reach.
fn wait_without_loop() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p = pair.clone();
    let waiter = thread::spawn(move || {
        let (lock, cv) = &*p;
        let mut ready = lock.lock().unwrap();
        if !*ready {
            ready = cv.wait(ready).unwrap();
        }
        dst::assert_always!(*ready, "woken only when ready");
    });
    let (lock, cv) = &*pair;
    *lock.lock().unwrap() = true;
    cv.notify_one();
    waiter.join().unwrap();
}

/// The same, correctly: the condition in a loop.
fn wait_in_loop() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p = pair.clone();
    let waiter = thread::spawn(move || {
        let (lock, cv) = &*p;
        let ready = cv.wait_while(lock.lock().unwrap(), |r| !*r).unwrap();
        dst::assert_always!(*ready, "woken only when ready");
    });
    let (lock, cv) = &*pair;
    *lock.lock().unwrap() = true;
    cv.notify_one();
    waiter.join().unwrap();
}

#[test]
fn spurious_wakeups_are_decisions() {
    let mut exec = InProcess::new(wait_without_loop);
    assert!(
        exec.run(&[]).signature().is_none(),
        "the nominal run has no spurious wakeup"
    );
    let failing: Vec<u64> = (0..2000u64)
        .filter(|seed| {
            exec.run(&seed.to_le_bytes()).signature() == property("woken only when ready")
        })
        .collect();
    assert!(
        !failing.is_empty(),
        "some input wakes the waiter spuriously"
    );
    // Replay: the same input fails the same way.
    let again = exec.run(&failing[0].to_le_bytes());
    assert_eq!(again.signature(), property("woken only when ready"));
    let records = clean(2000, wait_in_loop);
    let spurious = records
        .iter()
        .filter(|r| {
            r.decisions
                .iter()
                .any(|d| d.kind == dst::decision::Kind::Fault as u8 && d.value != 0)
        })
        .count();
    assert!(spurious > 0, "a loop survives the spurious wakeups it met");
}

#[test]
fn a_downgraded_write_lock_lets_no_writer_in() {
    clean(300, || {
        let lock = Arc::new(RwLock::new(0u32));
        let l = lock.clone();
        let writer = thread::spawn(move || *l.write().unwrap() = 2);
        let r = lock.clone();
        let reader = thread::spawn(move || *r.read().unwrap());
        let mut mine = lock.write().unwrap();
        *mine = 1;
        let read = RwLockWriteGuard::downgrade(mine);
        thread::yield_now();
        dst::assert_always!(*read == 1, "no writer between a write and its downgrade");
        drop(read);
        writer.join().unwrap();
        let seen = reader.join().unwrap();
        dst::assert_always!(seen <= 2, "a reader sees a written value");
    });
    // Outside control too.
    let lock = RwLock::new(5);
    let read = RwLockWriteGuard::downgrade(lock.write().unwrap());
    assert_eq!(*read, 5);
    assert!(lock.try_read().is_ok());
    assert!(lock.try_write().is_err());
}

#[test]
fn try_lock_under_control_fails_while_held() {
    clean(300, || {
        let lock = Arc::new(Mutex::new(0u32));
        let held = Arc::new(AtomicBool::new(false));
        let (l, h) = (lock.clone(), held.clone());
        let t = thread::spawn(move || {
            let guard = l.try_lock();
            // While main holds the lock (and says so), the try fails.
            dst::assert_always!(
                !(guard.is_ok() && h.load(SeqCst)),
                "try_lock fails while held"
            );
        });
        {
            let _g = lock.lock().unwrap();
            held.store(true, SeqCst);
            thread::yield_now();
            held.store(false, SeqCst);
        }
        t.join().unwrap();
    });
}
