//! Clusters on the emulator: programs on several nodes, one run, a
//! network between them, crashes of a node and its restart; built with
//! Debian's riscv64-linux-gnu-gcc (which .ci/run installs).

use std::path::{Path, PathBuf};
use std::process::Command;

use dst_executors::riscv::cluster::{Cluster, Config};
use dst_executors::{End, Executor};

mod common;
use common::input;

/// A scratch folder for this test process, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("dst-cluster-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Builds `examples/cluster/NAME.c` into `dir` as a static riscv64
/// program; `None` (saying so) without the cross compiler.
fn build(dir: &Path, name: &str, out: &str, flags: &[&str]) -> Option<PathBuf> {
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../examples/cluster/{name}.c"));
    build_c(&source, &dir.join(out), flags)
}

/// Builds the C program `source` as the static riscv64 program `program`;
/// `None` (saying so) without the cross compiler.
fn build_c(source: &Path, program: &Path, flags: &[&str]) -> Option<PathBuf> {
    let built = Command::new("riscv64-linux-gnu-gcc")
        .args(["-O1", "-g", "-static"])
        .args(flags)
        .arg(source)
        .arg("-o")
        .arg(program)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("skipped: riscv64-linux-gnu-gcc is not installed");
        return None;
    }
    Some(program.to_path_buf())
}

/// The cluster of the file `dir/NAME.toml`, written with `text`.
fn cluster_file(dir: &Path, name: &str, text: &str) -> Cluster {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    Cluster::open(&file, 50_000_000).unwrap()
}

/// Runs `failing` twice: the same end and the same calls on every node
/// (a finding replays). The end, the machines as its runs left them.
fn replays(cluster: &mut Cluster, failing: &[u8]) -> End {
    let first = cluster.execute(failing);
    let nodes = cluster.names().len();
    let calls: Vec<_> = (0..nodes)
        .map(|i| cluster.machine(i).calls.clone())
        .collect();
    assert_eq!(cluster.execute(failing), first, "the same on replay");
    for (i, calls) in calls.iter().enumerate() {
        assert_eq!(&cluster.machine(i).calls, calls, "node {i}: the same calls");
    }
    first
}

/// Every one of `inputs` runs well (else the client's, node 1's, error
/// output says why).
fn never_fails(cluster: &mut Cluster, inputs: &[Vec<u8>]) {
    for input in inputs {
        assert_eq!(
            cluster.execute(input),
            End::Ok,
            "{}",
            String::from_utf8_lossy(&cluster.machine(1).kernel.stderr)
        );
    }
}

/// The register cluster of `examples/cluster/register.toml`, its server
/// `server` (a program in `dir`).
fn register(dir: &Path, server: &str) -> Cluster {
    let file = dir.join(format!("{server}.toml"));
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cluster/register.toml");
    let text = std::fs::read_to_string(example)
        .unwrap()
        .replace("\"register-server\"", &format!("\"{server}\""));
    std::fs::write(&file, text).unwrap();
    Cluster::open(&file, 50_000_000).unwrap()
}

#[test]
fn a_write_acknowledged_before_it_was_durable_is_lost_in_a_crash_found_and_replayed() {
    let scratch = Scratch::new("register");
    let dir = &scratch.0;
    let (Some(_), Some(_), Some(_)) = (
        build(dir, "register-server", "register-server", &[]),
        build(dir, "register-server", "fixed-server", &["-DFIXED"]),
        build(dir, "register-client", "register-client", &[]),
    ) else {
        return;
    };
    let mut cluster = register(dir, "register-server");
    assert_eq!(cluster.names(), ["server", "client"]);
    // Nominal: the client's five writes and its read cross the network.
    assert_eq!(cluster.execute(&[]), End::Ok);
    let client = cluster.machine(1);
    assert_eq!(String::from_utf8_lossy(&client.kernel.stdout), "read 5\n");
    let server = cluster.machine(0);
    assert!(
        server.calls.iter().any(|&(n, r)| n == 202 && r >= 0),
        "the server accepted the client's connection"
    );
    assert!(
        client.calls.iter().any(|&(n, r)| n == 203 && r == 0),
        "the client's connect to the other node succeeded"
    );
    let nominal = cluster.machine(1).calls.clone();
    assert_eq!(cluster.execute(&[]), End::Ok);
    assert_eq!(cluster.machine(1).calls, nominal, "the same calls again");

    let inputs: Vec<Vec<u8>> = (1u64..3000).map(|seed| input(seed, 256)).collect();
    let failing = inputs
        .iter()
        .find(|input| cluster.execute(input) != End::Ok)
        .expect("some run crashes the server between an acknowledgement and its sync");
    let first = replays(&mut cluster, failing);
    let End::Crash(dst_kernel::Outcome::Crash { cause, message, .. }) = &first else {
        panic!("{first:?}")
    };
    assert_eq!(cause, "exit");
    assert!(message.starts_with("node client: "), "{message}");
    let server = cluster.machine(0);
    assert!(
        server
            .calls
            .iter()
            .any(|&(n, _)| n == dst_executors::riscv::machine::CRASHED),
        "the server crashed and restarted"
    );
    let stderr = String::from_utf8_lossy(&cluster.machine(1).kernel.stderr).into_owned();
    assert!(stderr.starts_with("lost an acknowledged write"), "{stderr}");

    // Durable before acknowledged: no input loses a write.
    let mut fixed = register(dir, "fixed-server");
    never_fails(&mut fixed, &inputs);
}

#[test]
fn a_cluster_file_that_is_wrong_is_one_line_naming_what() {
    let scratch = Scratch::new("bad");
    let dir = &scratch.0;
    let bad = |name: &str, text: &str| {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        match Cluster::open(&file, 1_000_000) {
            Ok(_) => panic!("{name} was taken"),
            Err(e) => {
                assert!(!e.contains('\n'), "one line: {e}");
                e
            }
        }
    };
    let e = bad(
        "unknown.toml",
        "[[node]]\nname = \"a\"\nprogram = \"p\"\ncolour = \"red\"\n",
    );
    assert!(e.contains("colour"), "{e}");
    let e = bad(
        "missing.toml",
        "[[node]]\nname = \"a\"\nprogram = \"nothing-here\"\n",
    );
    assert!(
        e.starts_with("node a (") && e.contains("nothing-here"),
        "{e}"
    );
    std::fs::write(dir.join("text"), "not a program").unwrap();
    let e = bad("text.toml", "[[node]]\nname = \"a\"\nprogram = \"text\"\n");
    assert!(e.contains("node a") && e.contains("ELF"), "{e}");
    let e = bad(
        "twice.toml",
        "[[node]]\nname = \"a\"\nprogram = \"p\"\n[[node]]\nname = \"a\"\nprogram = \"p\"\n",
    );
    assert_eq!(e, "two nodes are named a");
    let e = bad("empty.toml", "");
    assert!(e.contains("node"), "{e}");
    // And a good one reads.
    let config: Config = Config::load(&{
        let file = dir.join("good.toml");
        std::fs::write(
            &file,
            "[[node]]\nname = \"a\"\nprogram = \"p\"\nargs = [\"1\"]\nenv = { K = \"v\" }\n\
             workload = true\nfaults = false\n[network]\nlatency_us = 5\n",
        )
        .unwrap();
        file
    })
    .unwrap();
    assert_eq!(config.node[0].program, dir.join("p"));
    assert!(config.node[0].workload && !config.node[0].faults);
    assert_eq!(config.network.latency_us, 5);
    assert_eq!(config.network.max_delay_us, 10_000);
}

#[test]
fn a_go_client_s_retry_that_is_not_idempotent_counts_twice_after_a_slow_answer() {
    // examples/cluster/counter: net/http on both nodes, the client finding
    // the server by its name in /etc/hosts.
    let scratch = Scratch::new("counter");
    let dir = &scratch.0;
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cluster/counter");
    let (Some(server), Some(client)) = (
        common::build_go(&example.join("server.go"), "counter-server"),
        common::build_go(&example.join("client.go"), "counter-client"),
    ) else {
        return;
    };
    std::fs::copy(&server, dir.join("server")).unwrap();
    std::fs::copy(&client, dir.join("client")).unwrap();
    let file = dir.join("counter.toml");
    std::fs::copy(example.join("counter.toml"), &file).unwrap();
    let mut cluster = Cluster::open(&file, 100_000_000).unwrap();
    assert_eq!(
        cluster.execute(&[]),
        End::Ok,
        "{}",
        String::from_utf8_lossy(&cluster.machine(1).kernel.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&cluster.machine(1).kernel.stdout),
        "value 10\n"
    );
    // One fault decision struck at a time (a delayed packet, a clock
    // jump), past the stream's seed: some makes an answer slower than
    // the client's timeout, and the retry adds again.
    let failing = (0..400)
        .map(|at| {
            let mut input = vec![0u8; 8 + at + 1];
            input[8 + at] = 0xFF;
            input
        })
        .find(|input| cluster.execute(input) != End::Ok)
        .expect("one fault makes the client count twice");
    let first = cluster.execute(&failing);
    let End::Crash(dst_kernel::Outcome::Crash { message, .. }) = &first else {
        panic!("{first:?}")
    };
    assert_eq!(message, "node client: the program exited with status 1");
    assert_eq!(
        String::from_utf8_lossy(&cluster.machine(1).kernel.stderr),
        "counted 11 additions for 10\n"
    );
    let calls = cluster.machine(1).calls.clone();
    assert_eq!(cluster.execute(&failing), first, "the same on replay");
    assert_eq!(cluster.machine(1).calls, calls);
}

/// The heartbeat cluster (`tests/cluster/heartbeat.c` on two nodes) with
/// `faults` as its `[faults]` section, the server's own `faults` on.
fn heartbeat(dir: &Path, program: &Path, name: &str, faults: &str) -> Cluster {
    let program = program.display();
    let text = format!(
        "[[node]]\nname = \"server\"\nprogram = \"{program}\"\nargs = [\"server\", \"9000\"]\n\n\
         [[node]]\nname = \"client\"\nprogram = \"{program}\"\n\
         args = [\"client\", \"10.0.0.1\", \"9000\"]\nworkload = true\nfaults = false\n\n\
         [network]\nmax_delay_us = 0\n\n[faults]\n{faults}\n"
    );
    cluster_file(dir, name, &text)
}

#[test]
fn a_partition_and_a_pause_each_cut_a_heartbeat_and_replay() {
    let scratch = Scratch::new("heartbeat");
    let dir = &scratch.0;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/heartbeat.c");
    let Some(program) = build_c(&source, &dir.join("heartbeat"), &[]) else {
        return;
    };
    let inputs: Vec<Vec<u8>> = (1u64..400).map(|seed| input(seed, 64)).collect();
    for (name, faults) in [
        ("partition", "period_ms = 20\npauses = false"),
        ("pause", "period_ms = 20\npartitions = false"),
    ] {
        let mut cluster = heartbeat(dir, &program, name, faults);
        assert_eq!(cluster.execute(&[]), End::Ok, "{name}: nominal");
        assert_eq!(
            String::from_utf8_lossy(&cluster.machine(1).kernel.stdout),
            "20 pongs\n"
        );
        let failing = inputs
            .iter()
            .find(|input| cluster.execute(input) != End::Ok)
            .unwrap_or_else(|| panic!("{name}: some round cuts the heartbeat"));
        let first = replays(&mut cluster, failing);
        let End::Crash(dst_kernel::Outcome::Crash { message, .. }) = &first else {
            panic!("{name}: {first:?}")
        };
        assert_eq!(message, "node client: the program exited with status 1");
        let stderr = String::from_utf8_lossy(&cluster.machine(1).kernel.stderr).into_owned();
        assert!(
            stderr.starts_with("no pong within 50 ms"),
            "{name}: {stderr}"
        );
    }
    // Without rounds, nothing cuts it.
    let mut calm = heartbeat(dir, &program, "calm", "period_ms = 0");
    never_fails(&mut calm, &inputs);
    // A server bound to 127.0.0.1 is not reached from another node (the
    // client's connect is refused: its status 5), one bound to its own
    // address is.
    for (address, status) in [("127.0.0.1", Some(5)), ("10.0.0.1", None)] {
        let file = dir.join("bound.toml");
        let text = std::fs::read_to_string(dir.join("calm.toml"))
            .unwrap()
            .replace(
                "[\"server\", \"9000\"]",
                &format!("[\"server\", \"9000\", \"{address}\"]"),
            );
        assert!(text.contains(address));
        std::fs::write(&file, text).unwrap();
        let end = Cluster::open(&file, 50_000_000).unwrap().execute(&[]);
        match status {
            Some(code) => assert_eq!(
                end,
                End::crash(
                    "exit",
                    format!("node client: the program exited with status {code}"),
                    None
                ),
                "bound to {address}"
            ),
            None => assert_eq!(end, End::Ok, "bound to {address}"),
        }
    }
}

#[test]
fn a_history_the_workload_writes_is_checked_for_linearizability_after_each_run() {
    let scratch = Scratch::new("history");
    let dir = &scratch.0;
    let (Some(_), Some(_), Some(_)) = (
        build(dir, "register-server", "register-server", &[]),
        build(dir, "register-server", "fixed-server", &["-DFIXED"]),
        build(dir, "register-client", "register-client", &[]),
    ) else {
        return;
    };
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cluster/register-history.toml");
    let open = |server: &str| {
        let file = dir.join(format!("{server}-history.toml"));
        let text = std::fs::read_to_string(&example)
            .unwrap()
            .replace("\"register-server\"", &format!("\"{server}\""));
        std::fs::write(&file, text).unwrap();
        Cluster::open(&file, 50_000_000).unwrap()
    };
    let mut cluster = open("register-server");
    let property = cluster.catalog().len() - 1;
    assert_eq!(
        cluster.catalog()[property].message,
        "/history.jsonl is linearizable (register model)"
    );
    let failed = |cluster: &Cluster| {
        cluster
            .region()
            .header()
            .first_failure
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    assert_eq!(cluster.execute(&[]), End::Ok);
    assert_eq!(failed(&cluster), 0, "the nominal history is linearizable");
    let history = cluster
        .machine(1)
        .kernel
        .file_contents("/history.jsonl")
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&history).lines().count(), 12);
    let inputs: Vec<Vec<u8>> = (1u64..800).map(|seed| input(seed, 256)).collect();
    let failing = inputs
        .iter()
        .find(|input| {
            let end = cluster.execute(input);
            assert_eq!(
                end,
                End::Ok,
                "the client leaves the judgement to the history"
            );
            failed(&cluster) != 0
        })
        .expect("some run's history reads a write that was lost");
    cluster.execute(failing);
    assert_eq!(
        failed(&cluster),
        property as u64 + 1,
        "the history's property"
    );
    let stdout = String::from_utf8_lossy(&cluster.machine(1).kernel.stdout).into_owned();
    assert_ne!(stdout, "read 5\n", "the read missed the last write");
    // Durable before acknowledged: every history is linearizable, also
    // when the client crashes and starts its workload again (what it left
    // pending is closed as unknown, not read as a second invocation).
    let mut fixed = open("fixed-server");
    for input in &inputs {
        assert_eq!(fixed.execute(input), End::Ok);
        assert_eq!(failed(&fixed), 0);
    }
    let file = dir.join("fixed-server-history.toml");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("workload = true\nfaults = false", "workload = true");
    std::fs::write(&file, text).unwrap();
    let mut crashing = Cluster::open(&file, 50_000_000).unwrap();
    let mut client_crashed = 0;
    for input in &inputs {
        assert_eq!(crashing.execute(input), End::Ok);
        assert_eq!(
            failed(&crashing),
            0,
            "{}",
            String::from_utf8_lossy(
                &crashing
                    .machine(1)
                    .kernel
                    .file_contents("/history.jsonl")
                    .unwrap()
            )
        );
        let crashed = dst_executors::riscv::machine::CRASHED;
        if crashing.machine(1).calls.iter().any(|&(n, _)| n == crashed) {
            client_crashed += 1;
        }
    }
    assert!(client_crashed > 0, "some run crashed the client");
}

#[test]
fn a_tokio_server_s_write_acknowledged_before_it_was_durable_is_lost_in_a_crash() {
    // examples/cluster/register-tokio: the register server in Rust on
    // tokio (tokio from crates.io, pinned by its lock file), unmodified,
    // its files through tokio::fs, with the C client.
    if !common::rust_target_installed() {
        return;
    }
    let scratch = Scratch::new("register-tokio");
    let dir = &scratch.0;
    let Some(_) = build(dir, "register-client", "register-client", &[]) else {
        return;
    };
    let manifest =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cluster/register-tokio/Cargo.toml");
    let program = common::build_riscv_rust(&manifest, "register-tokio");
    let open = |fixed: bool| {
        let file = dir.join(format!("tokio-{fixed}.toml"));
        let args = if fixed {
            "[\"7000\", \"fixed\"]"
        } else {
            "[\"7000\"]"
        };
        std::fs::write(
            &file,
            format!(
                "[[node]]\nname = \"server\"\nprogram = \"{}\"\nargs = {args}\n\n\
                 [[node]]\nname = \"client\"\nprogram = \"register-client\"\n\
                 args = [\"10.0.0.1\", \"7000\"]\nworkload = true\nfaults = false\n",
                program.display()
            ),
        )
        .unwrap();
        Cluster::open(&file, 100_000_000).unwrap()
    };
    let mut cluster = open(false);
    assert_eq!(
        cluster.execute(&[]),
        End::Ok,
        "{}",
        String::from_utf8_lossy(&cluster.machine(1).kernel.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&cluster.machine(1).kernel.stdout),
        "read 5\n"
    );
    let inputs: Vec<Vec<u8>> = (1u64..1500).map(|seed| input(seed, 256)).collect();
    let failing = inputs
        .iter()
        .find(|input| cluster.execute(input) != End::Ok)
        .expect("some run crashes the tokio server between an acknowledgement and its sync");
    let first = replays(&mut cluster, failing);
    let End::Crash(dst_kernel::Outcome::Crash { message, .. }) = &first else {
        panic!("{first:?}")
    };
    assert_eq!(message, "node client: the program exited with status 1");
    let crashed = dst_executors::riscv::machine::CRASHED;
    assert!(cluster.machine(0).calls.iter().any(|&(n, _)| n == crashed));
    let mut fixed = open(true);
    never_fails(&mut fixed, &inputs[..300]);
}

#[test]
fn a_stop_sends_sigterm_and_a_node_s_end_after_it_is_judged() {
    let scratch = Scratch::new("stop");
    let dir = &scratch.0;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/stop.c");
    let Some(program) = build_c(&source, &dir.join("stop"), &[]) else {
        return;
    };
    let open = |mode: &str, stop: &str| {
        let program = program.display();
        let text = format!(
            "[[node]]\nname = \"server\"\nprogram = \"{program}\"\nargs = [\"server\", \"{mode}\"]\n\
             faults = false\n\n\
             [[node]]\nname = \"client\"\nprogram = \"{program}\"\nargs = [\"client\"]\n\
             workload = true\nfaults = false\n\n[faults]\nperiod_ms = 0\n\n{stop}"
        );
        cluster_file(dir, &format!("stop-{mode}"), &text)
    };
    let stop = "[stop]\nterm = true\ngrace_ms = 200\n";
    let stdout = |c: &Cluster| String::from_utf8_lossy(&c.machine(0).kernel.stdout).into_owned();
    let state = |c: &Cluster| c.machine(0).kernel.file_contents("/state");

    // Its handler ends the wait in accept (EINTR), it writes its state
    // and exits 0: an orderly stop, the same on every run. With
    // SA_RESTART, its wait in poll ends the same way (Linux never
    // restarts a poll).
    for (mode, call) in [("orderly", 202), ("restart", 73)] {
        let mut orderly = open(mode, stop);
        for _ in 0..2 {
            assert_eq!(orderly.execute(&[]), End::Ok, "{mode}");
            assert_eq!(stdout(&orderly), "stopped in order\n", "{mode}");
            assert_eq!(state(&orderly).as_deref(), Some(&b"stopped\n"[..]));
            let calls = &orderly.machine(0).calls;
            assert!(
                calls.iter().any(|&(n, r)| n == call && r == -4),
                "{mode}: the wait returned EINTR"
            );
            assert!(orderly.now() < 100_000_000, "{mode}: well before its grace");
        }
    }
    // Without [stop] the run ends with the workload: no SIGTERM.
    let mut unstopped = open("orderly", "");
    assert_eq!(unstopped.execute(&[]), End::Ok);
    assert_eq!(stdout(&unstopped), "");
    assert_eq!(state(&unstopped), None);
    // Exiting 3 after SIGTERM is a finding naming the node and the stop.
    let mut broken = open("broken", stop);
    let end = broken.execute(&[]);
    let End::Crash(dst_kernel::Outcome::Crash { message, .. }) = &end else {
        panic!("{end:?}")
    };
    assert_eq!(
        message,
        "node server: the program exited with status 3 (stopping: after SIGTERM)"
    );
    // SIGTERM's default action is an orderly end, at once; one ignored is
    // killed when its grace (200 ms) ends.
    for (mode, ended) in [
        ("default", 0..100_000_000),
        ("ignore", 200_000_000..u64::MAX),
    ] {
        let mut cluster = open(mode, stop);
        assert_eq!(cluster.execute(&[]), End::Ok, "{mode}");
        assert_eq!(stdout(&cluster), "", "{mode}");
        assert_eq!(state(&cluster), None, "{mode}");
        assert!(ended.contains(&cluster.now()), "{mode}: {}", cluster.now());
    }
}

#[test]
fn clock_skew_and_a_lost_datagram_are_each_found_and_replay() {
    let scratch = Scratch::new("clock");
    let dir = &scratch.0;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/clock.c");
    let Some(program) = build_c(&source, &dir.join("clock"), &[]) else {
        return;
    };
    let open = |name: &str, skew: u64| {
        let program = program.display();
        let text = format!(
            "[[node]]\nname = \"server\"\nprogram = \"{program}\"\nargs = [\"server\", \"9000\"]\n\
             faults = false\n\n\
             [[node]]\nname = \"client\"\nprogram = \"{program}\"\n\
             args = [\"client\", \"10.0.0.1\", \"9000\"]\nworkload = true\nfaults = false\n\n\
             [network]\nmax_delay_us = 0\n\n[faults]\nperiod_ms = 0\nmax_skew_ms = {skew}\n"
        );
        cluster_file(dir, &format!("clock-{name}"), &text)
    };
    let status = |end: &End| match end {
        End::Crash(dst_kernel::Outcome::Crash { message, .. }) => message.clone(),
        end => format!("{end:?}"),
    };
    let inputs: Vec<Vec<u8>> = (1u64..600).map(|seed| input(seed, 64)).collect();
    // (Random inputs also jump a node's clock forward at its readings, so
    // clocks may be apart without skew: the skew is checked itself.)
    let skewed = |c: &Cluster| (c.machine(0).skew - c.machine(1).skew).abs() > 50_000_000;
    for (name, skew, wanted, said) in [
        ("skew", 500, "status 3", "clocks "),
        ("loss", 0, "status 2", "lost\n"),
    ] {
        let mut cluster = open(name, skew);
        assert_eq!(cluster.execute(&[]), End::Ok, "{name}: nominal");
        let mut ends = Vec::new();
        let failing = inputs
            .iter()
            .find(|input| {
                let end = status(&cluster.execute(input));
                let found = end.ends_with(wanted) && (skew == 0 || skewed(&cluster));
                ends.push(end);
                found
            })
            .unwrap_or_else(|| panic!("{name}: found among {ends:?}"));
        replays(&mut cluster, failing);
        let stderr = String::from_utf8_lossy(&cluster.machine(1).kernel.stderr).into_owned();
        assert!(stderr.contains(said), "{name}: {stderr}");
        if skew == 0 {
            assert!(!skewed(&cluster), "no skew without max_skew_ms");
        }
    }
}

#[test]
fn a_realtime_futex_deadline_moves_with_the_node_s_skew() {
    let scratch = Scratch::new("timedwait");
    let dir = &scratch.0;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/timedwait.c");
    let Some(program) = build_c(&source, &dir.join("timedwait"), &["-pthread"]) else {
        return;
    };
    let text = format!(
        "[[node]]\nname = \"alone\"\nprogram = \"{}\"\nworkload = true\nfaults = false\n\n\
         [faults]\nperiod_ms = 0\nmax_skew_ms = 1000\n",
        program.display()
    );
    let mut cluster = cluster_file(dir, "timedwait", &text);
    assert_eq!(cluster.execute(&[]), End::Ok, "nominal");
    // The run's first decisions are the node's skew (a fault byte, then
    // the amount); every later one nominal (no jump of a reading): a
    // deadline 10 ms past a realtime reading is 10 ms away whatever the
    // skew, from a second behind to a second ahead.
    // The amount: three bytes, big-endian, modulo 2,000,001, less a
    // million, in microseconds: -1000, -805, +100 and +1000 ms.
    let amounts: [[u8; 3]; 4] = [
        [0, 0, 0],
        [0x40, 0, 0],
        [0x10, 0xC8, 0xE0],
        [0x1E, 0x84, 0x80],
    ];
    let mut seen = Vec::new();
    for amount in amounts {
        let mut skewed = vec![0u8; dst::decision::SEED_BYTES];
        skewed.push(0xFF);
        skewed.extend(amount);
        let end = cluster.execute(&skewed);
        let machine = cluster.machine(0);
        seen.push(machine.skew / 1_000_000);
        assert_eq!(
            end,
            End::Ok,
            "skew {} ms: {}",
            machine.skew / 1_000_000,
            String::from_utf8_lossy(&machine.kernel.stderr)
        );
    }
    assert_eq!(seen, [-1000, -805, 100, 1000]);
}
