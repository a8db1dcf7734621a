//! Runs per second of the wasm executor on examples/wasm/lease.wat, side by
//! side in one run with (a) the same logic as a Rust closure under the
//! in-process executor, and (b) instantiating the module for every run
//! instead of restoring its snapshot. `cargo bench -p dst-executors --bench
//! wasm` (pin it: `taskset -c 0`).

use std::path::Path;
use std::time::{Duration, Instant};

use dst_executors::wasm::{Options, Wasm};
use dst_executors::{Executor, InProcess};

/// The lease example's logic, natively: 1 us per clock reading unless the
/// step byte says jump, a ticket on renewal.
fn lease_native() {
    let mut now = 0u64;
    let mut tick = || {
        now += if dst::random::below(256) >= 0xF0 {
            (1 + dst::random::below(600)) * 1_000_000_000
        } else {
            1_000
        };
        now
    };
    let mut taken = tick();
    for _ in 0..8 {
        if tick() - taken > 30_000_000_000 {
            let mut ticket = [0u8];
            dst::random::fill(&mut ticket);
            taken = tick();
            assert!(ticket[0] != 42, "wrote under an expired lease");
        }
    }
}

/// Runs per second over `for` seconds, inputs varying as mutated ones do.
fn rate(exec: &mut dyn Executor, seconds: f64) -> f64 {
    let start = Instant::now();
    let mut runs = 0u64;
    while start.elapsed() < Duration::from_secs_f64(seconds) {
        for _ in 0..100 {
            runs += 1;
            exec.execute(&runs.to_le_bytes());
        }
    }
    runs as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wasm/lease.wat");
    let mut wasm = Wasm::load(&path, Options::default()).expect("the example loads");
    let wasm_rate = rate(&mut wasm, 3.0);
    let mut native = InProcess::new(lease_native);
    let native_rate = rate(&mut native, 3.0);
    let bytes = wat::parse_file(&path).expect("the example parses");
    let start = Instant::now();
    let mut fresh_runs = 0u64;
    while start.elapsed() < Duration::from_secs(3) {
        fresh_runs += 1;
        let mut fresh = Wasm::new(&bytes, "lease", Options::default()).expect("loads");
        fresh.execute(&fresh_runs.to_le_bytes());
    }
    let fresh_rate = fresh_runs as f64 / start.elapsed().as_secs_f64();
    println!("wasm executor on examples/wasm/lease.wat (runs/s):");
    println!("  wasm, snapshot restore        {wasm_rate:>10.0}");
    println!(
        "  wasm, instantiate per run     {fresh_rate:>10.0}   snapshot / instantiate {:.1}x",
        wasm_rate / fresh_rate
    );
    println!(
        "  native, in-process            {native_rate:>10.0}   wasm / native {:.2}",
        wasm_rate / native_rate
    );
}
