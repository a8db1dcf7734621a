//! The emulator against its anchors, side by side in one run (pin it:
//! `taskset -c 0 cargo bench -p dst-executors --bench riscv`):
//! - guest instructions per second, and the slowdown against the same C
//!   compute loop (`benches/riscv/compute.c`) built natively at -O2 (time
//!   per round of the same work);
//! - runs per second on a small program (examples/riscv/lease.c) through
//!   the executor (snapshot restore per run), against `qemu-riscv64`
//!   started fresh per run, which is what a user would do without dst.
//!
//! Needs `cc`, `riscv64-linux-gnu-gcc` and (for the second) `qemu-riscv64`;
//! says what it skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use dst_executors::Executor as _;
use dst_executors::riscv::executor::Emulator;
use dst_executors::riscv::machine::{Exit, Machine};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn compile(compiler: &str, source: &Path, out: &Path, flags: &[&str]) -> bool {
    Command::new(compiler)
        .args(flags)
        .arg(source)
        .arg("-o")
        .arg(out)
        .status()
        .is_ok_and(|s| s.success())
}

/// Seconds a native run of `program` with `args` takes (best of 5).
fn native_seconds(program: &Path, args: &[&str]) -> f64 {
    (0..5)
        .map(|_| {
            let start = Instant::now();
            let status = Command::new(program)
                .args(args)
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("dst-bench-riscv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let compute = root().join("executors/benches/riscv/compute.c");
    let (native, guest) = (dir.join("compute-native"), dir.join("compute-rv"));
    if !compile(
        "riscv64-linux-gnu-gcc",
        &compute,
        &guest,
        &["-O2", "-static"],
    ) {
        println!("skipped: riscv64-linux-gnu-gcc is not installed");
        return;
    }
    assert!(
        compile("cc", &compute, &native, &["-O2"]),
        "cc builds the loop"
    );

    // The compute loop: the same rounds on the emulator (from main, the
    // C library's start excluded) and natively (many more rounds, so that
    // process start-up is noise).
    let (rounds, native_rounds) = (400u64, 200_000u64);
    let bytes = std::fs::read(&guest).unwrap();
    let args = ["compute".to_string(), rounds.to_string()];
    let mut best = f64::INFINITY;
    let mut instructions = 0;
    for _ in 0..3 {
        let mut machine = Machine::load(&bytes, &args, &[]).unwrap();
        let start = Instant::now();
        let exit = machine.run(u64::MAX / 2);
        let seconds = start.elapsed().as_secs_f64();
        assert_eq!(exit, Exit::Status(0));
        instructions = machine.cpu.retired;
        best = best.min(seconds);
    }
    let native = native_seconds(&native, &[&native_rounds.to_string()]);
    let per_round_guest = best / rounds as f64;
    let per_round_native = native / native_rounds as f64;
    println!("emulator on benches/riscv/compute.c (-O2, {rounds} rounds):");
    println!(
        "  guest instructions/s   {:>12.0}  ({instructions} in {best:.3} s)",
        instructions as f64 / best
    );
    println!(
        "  slowdown vs native     {:>12.1}x (native {:.2} us/round, emulator {:.2} us/round)",
        per_round_guest / per_round_native,
        per_round_native * 1e6,
        per_round_guest * 1e6
    );

    // Runs per second on a small program.
    let lease = dir.join("lease");
    assert!(compile(
        "riscv64-linux-gnu-gcc",
        &root().join("examples/riscv/lease.c"),
        &lease,
        &["-O1", "-g", "-static"],
    ));
    let mut exec = Emulator::open(&lease, &["lease".to_string()], 10_000_000).unwrap();
    let runs = 20_000u64;
    exec.execute(&[]);
    let start = Instant::now();
    for i in 0..runs {
        exec.execute(&(i + 1).to_le_bytes());
    }
    let emulated = runs as f64 / start.elapsed().as_secs_f64();
    println!("examples/riscv/lease.c (runs/s):");
    println!("  emulator, snapshot per run     {emulated:>9.0}");
    let qemu_runs = 200;
    let start = Instant::now();
    for _ in 0..qemu_runs {
        let ran = Command::new("qemu-riscv64")
            .arg(&lease)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if ran.is_err() {
            println!("  qemu-riscv64: skipped (not installed)");
            return;
        }
    }
    let qemu = qemu_runs as f64 / start.elapsed().as_secs_f64();
    println!("  qemu-riscv64, a process per run {qemu:>8.0}");
    println!("  ratio                          {:>9.1}x", emulated / qemu);
    let _ = std::fs::remove_dir_all(&dir);
}
