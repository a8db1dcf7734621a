//! A growable ring buffer whose shrink path loses an element.
//!
//! The queue doubles when full and halves when a quarter full (above 16
//! slots). Halving copies the live elements into a smaller buffer, but when
//! the contents wrap around the end of the old buffer it copies one element
//! too few. The queue must first grow past 16 elements, though pops are more
//! likely than pushes, then drain to a quarter while its contents wrap: a
//! long, specific walk of pushes and pops.

use std::collections::VecDeque;

/// A ring buffer of `u32` (with the bug).
pub struct RingQueue {
    buf: Vec<u32>,
    head: usize,
    len: usize,
}

impl Default for RingQueue {
    fn default() -> Self {
        RingQueue::new()
    }
}

impl RingQueue {
    pub const MIN_CAPACITY: usize = 8;

    pub fn new() -> RingQueue {
        RingQueue {
            buf: vec![0; Self::MIN_CAPACITY],
            head: 0,
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    fn resize(&mut self, capacity: usize) {
        let mut buf = vec![0; capacity];
        let wraps = self.head + self.len > self.buf.len();
        // Bug: on shrink with wrapped contents, the last element is dropped.
        let copied = if wraps && capacity < self.buf.len() {
            self.len - 1
        } else {
            self.len
        };
        for (i, slot) in buf.iter_mut().enumerate().take(copied) {
            *slot = self.buf[(self.head + i) % self.buf.len()];
        }
        self.buf = buf;
        self.head = 0;
        self.len = copied;
    }

    pub fn push(&mut self, value: u32) {
        if self.len == self.buf.len() {
            self.resize(self.buf.len() * 2);
            dst::assert_reachable!("the queue grows");
        }
        let at = (self.head + self.len) % self.buf.len();
        self.buf[at] = value;
        self.len += 1;
    }

    pub fn pop(&mut self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let value = self.buf[self.head];
        self.head = (self.head + 1) % self.buf.len();
        self.len -= 1;
        if self.buf.len() > 2 * Self::MIN_CAPACITY && self.len <= self.buf.len() / 4 {
            dst::assert_sometimes!(
                self.head + self.len > self.buf.len(),
                "the queue shrinks with wrapped contents"
            );
            self.resize(self.buf.len() / 2);
        }
        Some(value)
    }
}

/// Runs `ops` random pushes and pops against the queue and a model.
pub fn simulate(ops: usize) {
    let mut queue = RingQueue::new();
    let mut model = VecDeque::new();
    let mut next = 0u32;
    for _ in 0..ops {
        // Pushes are the rarer operation (2 in 5), so long queues are rare.
        if dst::random::below(5) < 2 {
            queue.push(next);
            model.push_back(next);
            next += 1;
        } else {
            let got = queue.pop();
            let want = model.pop_front();
            dst::assert_always!(
                got == want,
                "the queue pops what was pushed, in order",
                &serde_json::json!({ "got": got, "want": want, "len": queue.len() })
            );
            if got != want {
                return;
            }
        }
        dst::assert_sometimes_greater_than!(
            queue.len(),
            16,
            "the queue holds more than 16 elements"
        );
        dst::assert_always!(
            queue.len() == model.len(),
            "the queue holds every element pushed and not popped",
            &serde_json::json!({ "queue": queue.len(), "model": model.len() })
        );
        if queue.len() != model.len() {
            return;
        }
        dst::assert_always_less_than_or_equal_to!(
            queue.len(),
            queue.capacity(),
            "length within capacity"
        );
    }
}
