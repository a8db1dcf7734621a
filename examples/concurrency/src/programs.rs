// The programs, written once against `thread`, `Mutex`, atomics and a
// `check!` macro that the including module provides: `lib.rs` with dst's
// controlled types and `dst::assert_always!`, `benches/schedules.rs` with
// shuttle's and `assert!`.

use std::sync::Arc;


#[track_caller]
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[track_caller]
fn join_all(handles: Vec<JoinHandle<()>>) {
    for handle in handles {
        handle.join().expect("threads of the example do not panic");
    }
}

/// A deposit and a withdrawal race; a checker started first asserts the
/// balance once both are done, with the sign of the deposit wrong.
pub fn account() {
    struct Account {
        balance: i64,
        deposited: bool,
        withdrawn: bool,
    }
    const START: i64 = 100;
    const DEPOSIT: i64 = 20;
    const WITHDRAWAL: i64 = 30;
    let account = Arc::new(Mutex::new(Account {
        balance: START,
        deposited: false,
        withdrawn: false,
    }));
    let a = account.clone();
    let check = thread::spawn(move || {
        let acc = lock(&a);
        if acc.deposited && acc.withdrawn {
            check!(
                acc.balance == START - DEPOSIT - WITHDRAWAL,
                "account: the balance after a deposit and a withdrawal",
                &serde_json::json!({ "balance": acc.balance })
            );
        }
    });
    let a = account.clone();
    let deposit = thread::spawn(move || {
        let mut acc = lock(&a);
        acc.balance += DEPOSIT;
        acc.deposited = true;
    });
    let a = account;
    let withdraw = thread::spawn(move || {
        let mut acc = lock(&a);
        acc.balance -= WITHDRAWAL;
        acc.withdrawn = true;
    });
    join_all(vec![check, deposit, withdraw]);
}

/// Two threads add 1 and 2 under a lock; a third, also under the lock,
/// must never see 3.
pub fn lazy01() {
    let data = Arc::new(Mutex::new(0u32));
    let mut handles = Vec::new();
    let d = data.clone();
    handles.push(thread::spawn(move || {
        let v = lock(&d);
        check!(*v < 3, "lazy01: the checker never sees 3", &*v);
    }));
    for add in [1, 2] {
        let d = data.clone();
        handles.push(thread::spawn(move || *lock(&d) += add));
    }
    join_all(handles);
}

/// Two threads lock `a` and `b` in opposite orders.
pub fn deadlock01() {
    let a = Arc::new(Mutex::new(0u32));
    let b = Arc::new(Mutex::new(0u32));
    let (a1, b1) = (a.clone(), b.clone());
    let t1 = thread::spawn(move || {
        let mut x = lock(&a1);
        let mut y = lock(&b1);
        *x += 1;
        *y += 1;
    });
    let t2 = thread::spawn(move || {
        let mut y = lock(&b);
        let mut x = lock(&a);
        *x += 1;
        *y += 1;
    });
    join_all(vec![t1, t2]);
}

/// A producer pushes `n` items, each under the lock, and raises a flag; a
/// consumer pops under the lock once the flag is up, assuming the stack is
/// never empty then.
pub fn stack(n: usize) {
    struct Stack {
        items: Vec<usize>,
        flag: bool,
    }
    let shared = Arc::new(Mutex::new(Stack {
        items: Vec::new(),
        flag: false,
    }));
    let s = shared.clone();
    let producer = thread::spawn(move || {
        for i in 0..n {
            let mut st = lock(&s);
            st.items.push(i);
            st.flag = true;
        }
    });
    let consumer = thread::spawn(move || {
        for _ in 0..n {
            let mut st = lock(&shared);
            if st.flag {
                let popped = st.items.pop();
                check!(popped.is_some(), "stack: no pop underflows", &popped);
            }
        }
    });
    join_all(vec![producer, consumer]);
}

/// `threads - 1` writers each set `data1 = 1` under one lock, then
/// `data2 = data1 + 1` under another; the last thread reads both (each
/// under its lock) and asserts it never sees the first stage alone.
pub fn twostage(threads: usize) {
    let data1 = Arc::new(Mutex::new(0u32));
    let data2 = Arc::new(Mutex::new(0u32));
    let mut handles = Vec::new();
    for _ in 1..threads.max(2) {
        let (d1, d2) = (data1.clone(), data2.clone());
        handles.push(thread::spawn(move || {
            *lock(&d1) = 1;
            let mut second = lock(&d2);
            *second = *lock(&d1) + 1;
        }));
    }
    handles.push(thread::spawn(move || {
        let first = *lock(&data1);
        let second = *lock(&data2);
        check!(
            first == 0 || second == first + 1,
            "twostage: the reader never sees the first stage alone",
            &serde_json::json!({ "data1": first, "data2": second })
        );
    }));
    join_all(handles);
}

/// `setters` threads each write `a = 1` then `b = -1`; a checker asserts
/// it sees both writes or neither.
pub fn reorder(setters: usize) {
    let a = Arc::new(AtomicI64::new(0));
    let b = Arc::new(AtomicI64::new(0));
    let mut handles = Vec::new();
    for _ in 0..setters {
        let (a, b) = (a.clone(), b.clone());
        handles.push(thread::spawn(move || {
            a.store(1, SeqCst);
            b.store(-1, SeqCst);
        }));
    }
    handles.push(thread::spawn(move || {
        let (x, y) = (a.load(SeqCst), b.load(SeqCst));
        check!(
            (x == 0 && y == 0) || (x == 1 && y == -1),
            "reorder: the checker sees both writes or neither",
            &serde_json::json!({ "a": x, "b": y })
        );
    }));
    join_all(handles);
}

/// A work-stealing deque (Chase-Lev style, fixed capacity) whose owner
/// takes the last item without the compare-and-swap on `top` that would
/// settle a race with a thief.
pub struct Deque {
    top: AtomicI64,
    bottom: AtomicI64,
    items: Vec<AtomicU64>,
}

impl Deque {
    pub fn new(capacity: usize) -> Deque {
        Deque {
            top: AtomicI64::new(0),
            bottom: AtomicI64::new(0),
            items: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn slot(&self, i: i64) -> &AtomicU64 {
        &self.items[i as usize % self.items.len()]
    }

    /// The owner adds an item at the bottom.
    pub fn push(&self, value: u64) {
        let b = self.bottom.load(SeqCst);
        self.slot(b).store(value, SeqCst);
        self.bottom.store(b + 1, SeqCst);
    }

    /// The owner takes the newest item.
    pub fn pop(&self) -> Option<u64> {
        let b = self.bottom.load(SeqCst) - 1;
        self.bottom.store(b, SeqCst);
        let t = self.top.load(SeqCst);
        if t > b {
            self.bottom.store(t, SeqCst);
            return None;
        }
        let value = self.slot(b).load(SeqCst);
        if t == b {
            // The bug: the last item also needs `top.compare_exchange(t, t + 1)`
            // to decide the race with a thief that read `top == t`.
            self.bottom.store(t + 1, SeqCst);
            self.top.store(t + 1, SeqCst);
        }
        Some(value)
    }

    /// A thief takes the oldest item.
    pub fn steal(&self) -> Option<u64> {
        let t = self.top.load(SeqCst);
        let b = self.bottom.load(SeqCst);
        if t >= b {
            return None;
        }
        let value = self.slot(t).load(SeqCst);
        self.top
            .compare_exchange(t, t + 1, SeqCst, SeqCst)
            .ok()
            .map(|_| value)
    }
}

/// The owner pushes three items and pops until empty while a thief steals
/// twice; every item must be taken exactly once.
pub fn wsq() {
    const ITEMS: u64 = 3;
    let deque = Arc::new(Deque::new(8));
    let taken = Arc::new(Mutex::new(Vec::new()));
    let (d, t) = (deque.clone(), taken.clone());
    let thief = thread::spawn(move || {
        for _ in 0..2 {
            if let Some(v) = d.steal() {
                lock(&t).push(v);
            }
        }
    });
    for v in 1..=ITEMS {
        deque.push(v);
    }
    while let Some(v) = deque.pop() {
        lock(&taken).push(v);
    }
    thief.join().expect("the thief does not panic");
    let mut all = lock(&taken).clone();
    all.sort_unstable();
    check!(
        all == (1..=ITEMS).collect::<Vec<_>>(),
        "wsq: every item is taken exactly once",
        &all
    );
}

/// Every program by name, for the explorer binaries and benchmarks.
pub const PROGRAMS: &[(&str, fn())] = &[
    ("account", account),
    ("lazy01", lazy01),
    ("deadlock01", deadlock01),
    ("stack", || stack(5)),
    ("twostage", || twostage(2)),
    ("twostage_50", || twostage(50)),
    ("twostage_100", || twostage(100)),
    ("reorder_5", || reorder(5)),
    ("reorder_20", || reorder(20)),
    ("reorder_50", || reorder(50)),
    ("wsq", wsq),
];

/// Runs the program called `name`.
pub fn run(name: &str) {
    let (_, program) = PROGRAMS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no program {name}"));
    program();
}
