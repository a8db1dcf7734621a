//! A cluster of unmodified Go programs on the emulator against
//! `qemu-riscv64` running the same programs, side by side in one run (pin
//! it: `taskset -c 1 cargo bench -p dst-executors --bench cluster`):
//! examples/cluster/counter's server and two clients, each making
//! ADDITIONS (20) requests to a counter of its own and reading it back:
//! three nodes.
//!
//! - dst: runs per second from the cluster's snapshot after setup, on the
//!   nominal input (no faults) and on random inputs (faults: delays,
//!   partitions, clock jumps), one process;
//! - qemu-riscv64: the server started once, the two clients run at once,
//!   again and again, over the host's loopback (no faults, no exploration:
//!   the floor a user would otherwise reach for; their checks of the value
//!   fail after the first run, their work is the same).
//!
//! Arguments: `[RUNS [ADDITIONS]]` (100, 20). Needs `go` and
//! `qemu-riscv64`; says what it skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use dst_executors::riscv::cluster::Cluster;
use dst_executors::{End, Executor as _};

// The tests' inputs and Go build (the same generator as the figures'
// runs had).
#[path = "../tests/common/mod.rs"]
mod common;
use common::{build_go, input};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let runs: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(100);
    let additions: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir: PathBuf =
        std::env::temp_dir().join(format!("dst-bench-cluster-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["server", "client"] {
        let source = root.join(format!("examples/cluster/counter/{name}.go"));
        let Some(program) = build_go(&source, name) else {
            return;
        };
        std::fs::copy(&program, dir.join(name)).unwrap();
        let _ = std::fs::remove_file(&program);
    }
    let toml = dir.join("counter.toml");
    std::fs::write(
        &toml,
        format!(
            "[[node]]\nname = \"server\"\nprogram = \"server\"\nfaults = false\n\n\
             [[node]]\nname = \"client-a\"\nprogram = \"client\"\n\
             args = [\"http://server:8080\", \"{additions}\", \"a\"]\nworkload = true\nfaults = false\n\n\
             [[node]]\nname = \"client-b\"\nprogram = \"client\"\n\
             args = [\"http://server:8080\", \"{additions}\", \"b\"]\nworkload = true\nfaults = false\n"
        ),
    )
    .unwrap();
    let start = Instant::now();
    let mut cluster = Cluster::open(&toml, 200_000_000).unwrap();
    println!(
        "cluster opened and set up (its snapshot after setup) in {:.3} s",
        start.elapsed().as_secs_f64()
    );
    let start = Instant::now();
    for _ in 0..runs {
        assert_eq!(cluster.execute(&[]), End::Ok);
    }
    let nominal = runs as f64 / start.elapsed().as_secs_f64();
    println!("dst, nominal input: {runs} runs, {nominal:.1} runs/s");
    let start = Instant::now();
    let mut failed = 0;
    for seed in 0..runs {
        if cluster.execute(&input(seed + 1, 64)) != End::Ok {
            failed += 1;
        }
    }
    let random = runs as f64 / start.elapsed().as_secs_f64();
    println!("dst, random inputs: {runs} runs ({failed} failing), {random:.1} runs/s");

    let server = Command::new("qemu-riscv64")
        .arg(dir.join("server"))
        .arg("127.0.0.1:18080")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut server) = server else {
        eprintln!("skipped: qemu-riscv64 is not installed");
        return;
    };
    std::thread::sleep(std::time::Duration::from_secs(1));
    let start = Instant::now();
    for _ in 0..runs {
        let clients: Vec<_> = ["a", "b"]
            .iter()
            .filter_map(|key| {
                Command::new("qemu-riscv64")
                    .arg(dir.join("client"))
                    .arg("http://127.0.0.1:18080")
                    .arg(additions.to_string())
                    .arg(key)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .ok()
            })
            .collect();
        for mut client in clients {
            let _ = client.wait();
        }
    }
    let qemu = runs as f64 / start.elapsed().as_secs_f64();
    let _ = server.kill();
    let _ = server.wait();
    println!("qemu-riscv64, two clients at once against one server: {qemu:.1} runs/s");
    println!(
        "dst / qemu-riscv64: nominal {:.2}x, random inputs {:.2}x",
        nominal / qemu,
        random / qemu
    );
    let _ = std::fs::remove_dir_all(&dir);
}
