//! Controlled Rust threads are continuations on the run's OS thread: std's
//! API (spawn, Builder, current, park/unpark, scope) and `dst::thread_local!`
//! behave per controlled thread, leftovers are torn down in place, and runs
//! stay pure functions of their input.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use dst::sync::Mutex;
use dst::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use dst::thread;
use dst_executors::{Executor, InProcess};
use dst_kernel::{Outcome, Signature};

fn property(message: &str) -> Option<Signature> {
    Some(Signature::Property {
        message: message.into(),
    })
}

/// Runs `body` under control for inputs 0..n and requires no finding.
fn clean(n: u64, body: fn()) {
    let mut exec = InProcess::new(body);
    for seed in 0..n {
        let record = exec.run(&seed.to_le_bytes());
        assert!(
            matches!(record.outcome, Outcome::Pass) && record.signature().is_none(),
            "seed {seed}: {:?} {:?}",
            record.outcome,
            record.signature()
        );
    }
}

dst::thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static LOG: RefCell<Vec<u32>> = RefCell::new(Vec::new());
}

std::thread_local! {
    static SHARED: Cell<u32> = const { Cell::new(0) };
}

#[test]
fn spawned_threads_share_the_os_thread_but_not_dst_thread_locals() {
    clean(200, || {
        let main_os = std::thread::current().id();
        let main = thread::current().id();
        SHARED.set(0);
        DEPTH.set(100);
        let handles: Vec<_> = (1..=3u32)
            .map(|i| {
                thread::spawn(move || {
                    // A continuation: the same OS thread, its own identity.
                    let same_os = std::thread::current().id() == main_os;
                    let own = thread::current().id() != main;
                    for _ in 0..i {
                        DEPTH.set(DEPTH.get() + 1);
                        LOG.with_borrow_mut(|l| l.push(i));
                        SHARED.set(SHARED.get() + 1);
                        thread::yield_now();
                    }
                    let mine =
                        LOG.with_borrow(|l| l.iter().all(|&x| x == i) && l.len() == i as usize);
                    (same_os, own, DEPTH.get() == i, mine)
                })
            })
            .collect();
        for handle in handles {
            let (same_os, own, depth, mine) = handle.join().unwrap();
            dst::assert_always!(same_os, "a spawned thread runs on the run's OS thread");
            dst::assert_always!(own, "a spawned thread has its own id");
            dst::assert_always!(depth && mine, "dst::thread_local! is per controlled thread");
        }
        dst::assert_always!(DEPTH.get() == 100, "the main thread keeps its own value");
        // std's thread-local is one for all: documented, and shown here.
        dst::assert_always!(SHARED.get() == 6, "std's thread_local! is shared");
    });
}

#[test]
fn builder_names_and_stack_sizes() {
    clean(50, || {
        let deep = thread::Builder::new()
            .name("deep".into())
            .stack_size(8 << 20)
            .spawn(|| {
                // About 4 MiB of frames: more than std's default 2 MiB.
                fn down(n: u32) -> u32 {
                    let pad = std::hint::black_box([1u8; 1024]);
                    if n == 0 {
                        0
                    } else {
                        down(n - 1) + u32::from(pad[7])
                    }
                }
                (thread::current().name().map(str::to_string), down(4000))
            })
            .unwrap();
        dst::assert_always!(deep.thread().name() == Some("deep"), "the handle's name");
        let (name, depth) = deep.join().unwrap();
        dst::assert_always!(name.as_deref() == Some("deep"), "current() knows the name");
        dst::assert_always!(depth == 4000, "the large stack held the recursion");
    });
}

#[test]
fn park_and_unpark_hand_over_a_token() {
    clean(300, || {
        let ready = Arc::new(AtomicBool::new(false));
        let r = ready.clone();
        let waiter = thread::spawn(move || {
            while !r.load(SeqCst) {
                thread::park();
            }
        });
        ready.store(true, SeqCst);
        waiter.thread().unpark();
        waiter.join().unwrap();
    });
    // A park nobody ends is a deadlock naming it.
    let mut exec = InProcess::new(|| {
        let t = thread::spawn(thread::park);
        t.join().unwrap();
    });
    let record = exec.run(&[]);
    assert_eq!(
        record.signature(),
        property("dst: deadlock (every live thread is blocked)")
    );
}

#[test]
fn a_lost_unpark_is_found_by_the_explorer_inputs() {
    // Checks the flag, then parks: an unpark in between is consumed as a
    // token, so this is correct; without the token (unpark before park
    // is lost) it would deadlock. Every schedule must pass.
    clean(500, || {
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        let t = thread::spawn(move || {
            if !f.load(SeqCst) {
                thread::park();
            }
        });
        flag.store(true, SeqCst);
        t.thread().unpark();
        t.join().unwrap();
    });
}

#[test]
fn scoped_threads_borrow_and_are_joined() {
    clean(300, || {
        let mut items = vec![1u64, 2, 3, 4];
        let total = AtomicU64::new(0);
        let lock = Mutex::new(Vec::new());
        thread::scope(|s| {
            for chunk in items.chunks(2) {
                s.spawn(|| {
                    let sum: u64 = chunk.iter().sum();
                    total.fetch_add(sum, SeqCst);
                    lock.lock().unwrap().push(sum);
                });
            }
        });
        dst::assert_always!(total.load(SeqCst) == 10, "every scoped thread ran");
        let mut sums = lock.into_inner().unwrap();
        sums.sort_unstable();
        dst::assert_always!(sums == vec![3, 7], "each chunk once");
        items.push(5); // the borrow ended with the scope
    });
}

#[test]
fn a_deadlock_inside_a_scope_tears_its_threads_down() {
    // Opposite lock order in a scope: some schedules deadlock; the scope's
    // continuations unwind before the borrowed locks go away, and the next
    // run is clean.
    let mut exec = InProcess::new(|| {
        let a = Mutex::new(0u32);
        let b = Mutex::new(0u32);
        thread::scope(|s| {
            s.spawn(|| {
                let _a = a.lock().unwrap();
                let _b = b.lock().unwrap();
            });
            s.spawn(|| {
                let _b = b.lock().unwrap();
                let _a = a.lock().unwrap();
            });
        });
    });
    let mut deadlocks = 0;
    for seed in 0..300u64 {
        let record = exec.run(&seed.to_le_bytes());
        match record.signature() {
            None => {}
            Some(s) => {
                assert_eq!(
                    Some(s),
                    property("dst: deadlock (every live thread is blocked)")
                );
                deadlocks += 1;
            }
        }
    }
    assert!(deadlocks > 0, "some schedule deadlocks");
    assert!(deadlocks < 300, "some schedule does not");
}

#[test]
fn leftover_threads_unwind_their_destructors() {
    // A thread blocked forever holds a guard whose destructor counts: the
    // run's end unwinds it in place.
    static DROPPED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    struct Counted;
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, SeqCst);
        }
    }
    let mut exec = InProcess::new(|| {
        let (_tx, rx) = dst::sync::mpsc::channel::<u32>();
        thread::spawn(move || {
            let _c = Counted;
            let _ = rx.recv();
        });
        thread::yield_now();
    });
    for run in 1..=20u64 {
        let record = exec.run(&[]);
        assert_eq!(
            record.signature(),
            property("dst: a thread outlives the target body")
        );
        assert_eq!(DROPPED.load(SeqCst), run, "run {run}: the leftover unwound");
    }
}

#[test]
fn many_threads_replay_exactly() {
    fn body() {
        let counter = Arc::new(AtomicU64::new(0));
        let handles: Vec<_> = (0..64)
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
        dst::assert_sometimes!(counter.load(SeqCst) < 64, "an increment is lost");
    }
    let mut exec = InProcess::new(body);
    for seed in 0..50u64 {
        let input = seed.to_le_bytes();
        let first = exec.run(&input);
        let again = exec.run(&input);
        assert_eq!(first.decisions, again.decisions, "seed {seed}");
        assert_eq!(first.signature(), again.signature(), "seed {seed}");
    }
}
