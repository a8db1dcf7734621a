//! A lease holder in plain Rust (std only, nothing from dst), built for
//! `wasm32-wasip1` and explored by dst's wasm executor, which owns its
//! clock and its randomness. It takes a lease and works for eight steps;
//! when a step finds the lease older than 30 s it renews it, and when the
//! renewal's ticket (drawn from std's `RandomState`, seeded by
//! `random_get`) is 7 it has raced another holder and goes on writing under
//! a lease it lost: a panic, which on wasm ends in a trap. Nominal runs
//! never get there: it takes a clock jump and one random value in 64.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

const LEASE: Duration = Duration::from_secs(30);

fn ticket() -> u64 {
    RandomState::new().build_hasher().finish() % 64
}

fn main() {
    let mut taken = Instant::now();
    for step in 0..8 {
        if taken.elapsed() > LEASE {
            println!("step {step}: lease expired, renewing");
            let ticket = ticket();
            taken = Instant::now();
            assert!(ticket != 7, "wrote under a lease another holder took");
        }
    }
    println!("work done");
}
