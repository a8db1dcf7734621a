//! Runs per second of the process executor on the C key-value example
//! (examples/c-kv), through the fork server, in persistent mode, and one
//! process per run. `cargo bench -p dst-executors --bench process`
//! (it builds libdst and the example first).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use dst_executors::{Executor as _, Process};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Builds libdst (release) and the example against it.
fn build_example() -> PathBuf {
    let root = root();
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "-p", "dst-c"])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(status.success());
    let lib = root.join("target/release");
    let out = std::env::temp_dir().join(format!("dst-bench-kv-{}", std::process::id()));
    let status = Command::new("cc")
        .args(["-O2", "-g", "-fsanitize-coverage=trace-pc", "-o"])
        .arg(&out)
        .arg(root.join("examples/c-kv/kv.c"))
        .arg("-I")
        .arg(root.join("sdk-c/include"))
        .arg("-L")
        .arg(&lib)
        .arg("-ldst")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .status()
        .unwrap();
    assert!(status.success());
    out
}

fn rate(exec: &mut Process, runs: u64) -> f64 {
    // Inputs that vary like mutated ones: seeds of the decision tail.
    exec.run(&[]);
    let start = Instant::now();
    for i in 0..runs {
        // The explorer's fast path: the outcome stays in the region.
        exec.execute(&(i + 1).to_le_bytes());
    }
    runs as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let kv = build_example();
    let timeout = Duration::from_secs(1);
    let mut server = Process::new(&kv, &[], timeout).unwrap();
    let forked = rate(&mut server, 5000);
    assert_eq!(server.launch_mode(), "fork server");
    let mut persistent = Process::new(&kv, &["--persistent".into()], timeout).unwrap();
    let persistent = rate(&mut persistent, 20000);
    let mut spawn = Process::new(&kv, &[], timeout).unwrap();
    spawn.set_fork_server(false);
    let spawned = rate(&mut spawn, 1000);
    println!("process executor on examples/c-kv (runs/s):");
    println!("  fork server          {forked:>9.0}");
    println!("  persistent (dst_run) {persistent:>9.0}");
    println!("  one process per run  {spawned:>9.0}");
    let _ = std::fs::remove_file(kv);
}
