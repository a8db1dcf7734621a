//! Runs per second of the KVM executor against the process executor's
//! fork server and persistent mode on the same small C program
//! (`benches/kvm/door.c`), side by side in one run, with the KVM
//! executor's exits and restored bytes per run. Pin it:
//! `taskset -c 0 cargo bench -p dst-executors --bench kvm`
//! (it builds libdst, the native program and the guest first; without
//! /dev/kvm it says so and measures only the process executor).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use dst_executors::kvm::build::build_guest;
use dst_executors::kvm::executor::{Kvm, Reset};
use dst_executors::{Executor, Process};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Inputs that vary like mutated ones: 8 seed bytes and 24 explicit ones
/// (more than the program's decisions take, as most explorer inputs).
fn inputs(count: usize) -> Vec<Vec<u8>> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..count)
        .map(|_| {
            (0..32)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 24) as u8
                })
                .collect()
        })
        .collect()
}

fn rate(exec: &mut dyn Executor, inputs: &[Vec<u8>]) -> f64 {
    exec.execute(&inputs[0]);
    let start = Instant::now();
    for input in inputs {
        exec.execute(input);
    }
    inputs.len() as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let root = root();
    let source = root.join("executors/benches/kvm/door.c");
    let dir = std::env::temp_dir().join(format!("dst-bench-kvm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "-p", "dst-c"])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(status.success());
    let lib = root.join("target/release");
    let native = dir.join("door-native");
    let status = Command::new("cc")
        .args(["-O2", "-g", "-fsanitize-coverage=trace-pc", "-o"])
        .arg(&native)
        .arg(&source)
        .arg("-I")
        .arg(root.join("sdk-c/include"))
        .arg("-L")
        .arg(&lib)
        .arg("-ldst")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .status()
        .unwrap();
    assert!(status.success());
    let timeout = Duration::from_secs(1);
    let work = inputs(5000);
    let mut forked = Process::new(&native, &[], timeout).unwrap();
    let forked_rate = rate(&mut forked, &work[..2000]);
    assert_eq!(forked.launch_mode(), "fork server");
    let mut persistent = Process::new(&native, &["--persistent".into()], timeout).unwrap();
    let persistent_rate = rate(&mut persistent, &work);
    println!("benches/kvm/door.c (runs/s, one run):");
    println!("  process executor, fork server   {forked_rate:>9.0}");
    println!("  process executor, persistent    {persistent_rate:>9.0}");
    let guest = dir.join("door.elf");
    build_guest("cc".as_ref(), &dir.join("build"), &[source.into()], &guest).unwrap();
    let mut kvm = match Kvm::open(&guest, timeout) {
        Ok(kvm) => kvm,
        Err(e) => {
            println!("  kvm executor: skipped ({e})");
            return;
        }
    };
    let kvm_rate = rate(&mut kvm, &work);
    println!("  kvm executor (copy reset)       {kvm_rate:>9.0}");
    println!(
        "  kvm / fork server {:.2}x, kvm / persistent {:.2}x; per kvm run: {} exits, {} KiB restored ({} pages)",
        kvm_rate / forked_rate,
        kvm_rate / persistent_rate,
        kvm.exits,
        kvm.restored_bytes() / 1024,
        kvm.restored_bytes().div_ceil(4096)
    );
    let mut logged = Kvm::open_with(&guest, timeout, Reset::DirtyLog).unwrap();
    let logged_rate = rate(&mut logged, &work[..2000]);
    println!(
        "  kvm executor (dirty-log reset)  {logged_rate:>9.0}  ({} pages restored per run; copy is {:.1}x as fast)",
        logged.restored_bytes() / 4096,
        kvm_rate / logged_rate
    );
    let _ = std::fs::remove_dir_all(&dir);
}
