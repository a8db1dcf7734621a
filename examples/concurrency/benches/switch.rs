//! What a thread switch costs under control, side by side in one run:
//! two threads yield to each other `ROUNDS` times each, and each line is
//! nanoseconds per yield.
//! - dst, Rust threads (continuations on the run's OS thread), in-process,
//!   nominal input (each yield hands over: a stack swap);
//! - shuttle 0.9.1, the same program (`check_random`: about half of its
//!   yields switch);
//! - dst, C threads (libdst's pthreads: OS threads passing a baton),
//!   `examples/concurrency/c/pingpong.c` in local mode (`DST_SEED=0`);
//! - the same C program uncontrolled (the kernel's `sched_yield`), and
//!   std threads handing a baton through a `Mutex` and `Condvar` (an OS
//!   switch each time), for reference.
//!
//! `taskset -c 0 cargo bench -p dst-example-concurrency --bench switch`
//! (builds libdst and the C program with `cc`) — see docs/benchmarks.md.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use dst_executors::{Executor as _, InProcess};

const ROUNDS: u64 = 20_000;
const RUNS: u64 = 20;

fn dst_pingpong() {
    let t = dst::thread::spawn(|| {
        for _ in 0..ROUNDS {
            dst::thread::yield_now();
        }
    });
    for _ in 0..ROUNDS {
        dst::thread::yield_now();
    }
    t.join().unwrap();
}

fn shuttle_pingpong() {
    let t = shuttle::thread::spawn(|| {
        for _ in 0..ROUNDS {
            shuttle::thread::yield_now();
        }
    });
    for _ in 0..ROUNDS {
        shuttle::thread::yield_now();
    }
    t.join().unwrap();
}

/// Nanoseconds per yield of `RUNS` runs of `run`.
fn per_yield(mut run: impl FnMut()) -> f64 {
    run(); // warm
    let start = Instant::now();
    for _ in 0..RUNS {
        run();
    }
    start.elapsed().as_nanos() as f64 / (RUNS * 2 * ROUNDS) as f64
}

/// std threads handing a baton back and forth: one OS switch per hand-over.
fn os_baton() -> f64 {
    let baton = Arc::new((Mutex::new(0u64), Condvar::new()));
    let b = baton.clone();
    let start = Instant::now();
    let other = std::thread::spawn(move || {
        let (lock, cv) = &*b;
        for i in 0..ROUNDS {
            let mut turn = lock.lock().unwrap();
            while *turn != 2 * i + 1 {
                turn = cv.wait(turn).unwrap();
            }
            *turn += 1;
            cv.notify_one();
        }
    });
    let (lock, cv) = &*baton;
    for i in 0..ROUNDS {
        let mut turn = lock.lock().unwrap();
        while *turn != 2 * i {
            turn = cv.wait(turn).unwrap();
        }
        *turn += 1;
        cv.notify_one();
    }
    other.join().unwrap();
    start.elapsed().as_nanos() as f64 / (2 * ROUNDS) as f64
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Builds libdst (release) and the C program; None (said why) if it fails.
fn build_c() -> Option<PathBuf> {
    let built = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "-p", "dst-c"])
        .current_dir(root())
        .status()
        .is_ok_and(|s| s.success());
    let lib = root().join("target/release");
    let out = std::env::temp_dir().join(format!("dst-pingpong-{}", std::process::id()));
    let compiled = built
        && Command::new("cc")
            .args(["-std=c11", "-O2", "-o"])
            .arg(&out)
            .arg(root().join("examples/concurrency/c/pingpong.c"))
            .arg("-I")
            .arg(root().join("sdk-c/include"))
            .arg("-L")
            .arg(&lib)
            .arg("-ldst")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .arg("-lpthread")
            .status()
            .is_ok_and(|s| s.success());
    if !compiled {
        eprintln!("switch: libdst or pingpong.c did not build; C rows skipped");
        return None;
    }
    Some(out)
}

/// The C program's own figure (nanoseconds per yield), best of `RUNS`.
fn c_per_yield(program: &Path, controlled: bool) -> f64 {
    (0..RUNS)
        .map(|_| {
            let mut cmd = Command::new(program);
            cmd.arg(ROUNDS.to_string());
            if controlled {
                cmd.env("DST_SEED", "0");
            }
            let out = cmd.output().expect("run pingpong");
            assert!(out.status.success(), "pingpong failed: {out:?}");
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse::<f64>()
                .unwrap()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let mut exec = InProcess::new(dst_pingpong);
    let dst = per_yield(|| {
        exec.execute(&[]);
    });
    let shuttle = per_yield(|| {
        shuttle::check_random(shuttle_pingpong, 1);
    });
    println!("yield ping-pong, {ROUNDS} rounds per thread, ns per yield");
    println!("dst Rust threads (continuations)   {dst:>9.1}");
    println!(
        "shuttle 0.9.1 (check_random)       {shuttle:>9.1}   dst/shuttle {:.2} (about half of shuttle's yields switch)",
        dst / shuttle
    );
    if let Some(program) = build_c() {
        let c = c_per_yield(&program, true);
        let plain = c_per_yield(&program, false);
        println!(
            "dst C threads (OS threads, baton)  {c:>9.1}   {:.1}x the Rust continuation",
            c / dst
        );
        println!("C uncontrolled (kernel sched_yield){plain:>9.1}");
        let _ = std::fs::remove_file(program);
    }
    println!("std threads, Mutex+Condvar baton   {:>9.1}", os_baton());
}
