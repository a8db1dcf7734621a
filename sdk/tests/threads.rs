//! Controlled threads: schedules are decisions, deadlocks and livelocks are
//! findings, replay reproduces, and outside a controlled run the types are
//! std's.

use std::sync::Arc;

use dst::region::{Event, FLAG_TRACE_SITES};
use dst::sync::atomic::{AtomicU64, Ordering::SeqCst};
use dst::sync::{Condvar, Mutex, mpsc};
use dst::thread;
use dst_executors::{Executor, InProcess};
use dst_kernel::{Outcome, Signature};

/// Two threads do a racy read-then-write increment.
fn racy() {
    let counter = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let c = counter.clone();
            thread::spawn(move || {
                let seen = c.load(SeqCst);
                c.store(seen + 1, SeqCst);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    dst::assert_always!(counter.load(SeqCst) == 2, "no increment is lost");
}

fn property(message: &str) -> Option<Signature> {
    Some(Signature::Property {
        message: message.into(),
    })
}

#[test]
fn the_nominal_schedule_has_no_preemption_and_one_byte_adds_one() {
    let mut exec = InProcess::new(racy);
    assert_eq!(
        exec.run(&[]).signature(),
        None,
        "nominal: each thread runs to its end"
    );
    // Strategy byte 0 (direct), then the first contested point: spawn of the
    // first thread (keep), ... A search over one explicit byte per point
    // finds the lost update, and the shortest such input is short.
    let mut found = None;
    'search: for len in 1..=10usize {
        for pos in 1..len {
            let mut input = vec![0u8; 8 + len];
            input[8 + pos] = 1;
            if exec.run(&input).signature() == property("no increment is lost") {
                found = Some(input);
                break 'search;
            }
        }
    }
    let input = found.expect("a single switch loses an increment");
    assert!(input.len() <= 8 + 10);
    // Replay is exact: the same decisions and trace, every time.
    let first = exec.run(&input);
    for _ in 0..5 {
        let again = exec.run(&input);
        assert_eq!(again.trace_hash, first.trace_hash);
        assert_eq!(again.signature(), first.signature());
    }
}

#[test]
fn random_tails_mix_strategies_and_replay_exactly() {
    let mut exec = InProcess::new(racy);
    let mut failing = 0;
    let mut strategies = std::collections::BTreeSet::new();
    for seed in 1..=300u64 {
        let input = seed.to_le_bytes();
        let first = exec.run(&input);
        let again = exec.run(&input);
        assert_eq!(first.trace_hash, again.trace_hash, "seed {seed} replays");
        assert_eq!(first.signature(), again.signature());
        failing += usize::from(first.signature().is_some());
        if let Some(d) = first
            .decisions
            .iter()
            .find(|d| d.kind == dst::decision::Kind::Strategy as u8)
        {
            strategies.insert(d.value % 4);
        }
    }
    assert!(failing > 0, "random schedules find the lost update");
    assert_eq!(
        strategies.len(),
        4,
        "direct, PCT and POS all occur: {strategies:?}"
    );
}

fn opposite_locks() {
    let a = Arc::new(Mutex::new(0));
    let b = Arc::new(Mutex::new(0));
    let (a1, b1) = (a.clone(), b.clone());
    let t = thread::spawn(move || {
        let _x = a1.lock().unwrap();
        let _y = b1.lock().unwrap();
    });
    {
        let _y = b.lock().unwrap();
        let _x = a.lock().unwrap();
    }
    t.join().unwrap();
}

#[test]
fn a_deadlock_is_a_finding_naming_each_blocked_thread() {
    let mut exec = InProcess::new(opposite_locks);
    exec.set_flags(FLAG_TRACE_SITES);
    let deadlock = (1..500u64)
        .map(|seed| exec.run(&seed.to_le_bytes()))
        .find(|r| r.signature().is_some())
        .expect("some schedule deadlocks");
    assert_eq!(
        deadlock.signature(),
        property("dst: deadlock (every live thread is blocked)")
    );
    let details = deadlock
        .events
        .iter()
        .find_map(|e| match e {
            Event::Assertion {
                details: Some(d), ..
            } => Some(serde_json::from_str::<serde_json::Value>(d).unwrap()),
            _ => None,
        })
        .expect("details");
    let threads = details["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2, "{details}");
    for t in threads {
        assert_eq!(t["state"], "blocked");
        assert_eq!(t["op"], "lock");
        assert!(t["at"].as_str().unwrap().contains("threads.rs"), "{t}");
    }
    let steps = deadlock
        .events
        .iter()
        .filter(|e| matches!(e, Event::Step(_)))
        .count();
    assert!(steps > 3, "the schedule is traced");
    // The run after a deadlock starts clean.
    assert_eq!(exec.run(&[]).signature(), None);
}

#[test]
fn a_spin_without_progress_hits_the_step_bound() {
    let mut exec = InProcess::new(|| {
        let flag = Arc::new(AtomicU64::new(0));
        let f = flag.clone();
        let t = thread::spawn(move || while f.load(SeqCst) == 0 {});
        t.join().unwrap();
    });
    assert_eq!(
        exec.run(&[]).signature(),
        property("dst: a run exceeds the scheduling step bound (livelock or hang)")
    );
}

#[test]
fn a_thread_left_running_is_reported_not_waited_for() {
    let mut exec = InProcess::new(|| {
        let (_tx, rx) = mpsc::channel::<u32>();
        let keep = Arc::new(Mutex::new(()));
        thread::spawn(move || {
            let _k = keep.lock().unwrap();
            let _ = rx.recv();
        });
    });
    let record = exec.run(&[]);
    assert_eq!(
        record.signature(),
        property("dst: a thread outlives the target body")
    );
}

#[test]
fn a_lost_wakeup_is_reported_as_a_deadlock() {
    // The waiter does not check a predicate: if the notify comes first, it
    // waits forever.
    let mut exec = InProcess::new(|| {
        let pair = Arc::new((Mutex::new(()), Condvar::new()));
        let p = pair.clone();
        let waiter = thread::spawn(move || {
            let guard = p.0.lock().unwrap();
            drop(p.1.wait(guard).unwrap());
        });
        pair.1.notify_one();
        waiter.join().unwrap();
    });
    assert_eq!(
        exec.run(&[]).signature(),
        property("dst: deadlock (every live thread is blocked)")
    );
}

#[test]
fn a_panicking_thread_is_seen_by_join_and_the_next_run_is_clean() {
    let mut exec = InProcess::new(|| {
        let t = thread::spawn(|| panic!("boom in a thread"));
        assert!(t.join().is_err());
        panic!("the body fails");
    });
    let record = exec.run(&[]);
    assert!(
        matches!(record.outcome, Outcome::Crash { ref message, .. } if message == "the body fails")
    );
    let _ = exec.catalog();
}

#[test]
fn channels_and_timeouts_under_control() {
    let mut exec = InProcess::new(|| {
        let (tx, rx) = mpsc::sync_channel(1);
        let producer = thread::spawn(move || {
            for i in 0..5u32 {
                tx.send(i).unwrap();
            }
        });
        let got: Vec<u32> = rx.iter().collect();
        producer.join().unwrap();
        dst::assert_always!(got == vec![0, 1, 2, 3, 4], "every message, in order");
        let (_tx2, rx2) = mpsc::channel::<u32>();
        let timed = rx2.recv_timeout(std::time::Duration::from_secs(3600));
        dst::assert_always!(
            timed.is_err(),
            "a timed receive with no sender times out at once"
        );
    });
    for seed in 0..100u64 {
        assert_eq!(
            exec.run(&seed.to_le_bytes()).signature(),
            None,
            "seed {seed}"
        );
    }
}

#[test]
fn outside_a_controlled_run_the_types_are_std() {
    // No explorer: threads really run at the same time (this barrier needs
    // both), and a mutex and condvar work across them.
    let barrier = Arc::new(dst::sync::Barrier::new(2));
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let (b, p) = (barrier.clone(), pair.clone());
    let t = thread::spawn(move || {
        b.wait();
        *p.0.lock().unwrap() = true;
        p.1.notify_all();
    });
    barrier.wait();
    let mut ready = pair.0.lock().unwrap();
    while !*ready {
        ready = pair.1.wait(ready).unwrap();
    }
    drop(ready);
    t.join().unwrap();
    assert!(!thread::is_controlled());
}
