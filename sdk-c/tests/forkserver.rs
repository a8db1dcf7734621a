//! The fork server inside libdst: forking before main, at
//! dst_setup_complete under DST_DEFER=1, and persistent mode (dst_run);
//! every mode gives the same run for the same input, and a crash costs only
//! the child. The server's learning runs (which code pages runs execute)
//! change no run, leave the server far less code mapped, register the
//! faults runs use, and survive a C library whose fork blocks signals.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use dst_executors::{Executor, Process};
use dst_kernel::{Outcome, RunRecord};

fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// Builds tests/c/server.c as a program of its own for each `name` (tests
/// run at once, and one finds its server by its executable).
fn build_server(name: &str) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--manifest-path"])
        .arg(manifest.join("Cargo.toml"))
        .status()
        .unwrap();
    assert!(status.success());
    let out = std::env::temp_dir().join(format!("dst-c-server-{name}-{}", std::process::id()));
    let status = Command::new("cc")
        .args(["-std=c11", "-g", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(manifest.join("tests/c/server.c"))
        .arg("-I")
        .arg(manifest.join("include"))
        .arg("-L")
        .arg(target_dir())
        .arg("-ldst")
        .arg(format!("-Wl,-rpath,{}", target_dir().display()))
        .status()
        .unwrap();
    assert!(status.success());
    out
}

/// An executor for the program whose starts and setups go to `log`.
fn executor(program: &Path, args: &[&str], log: &Path) -> Process {
    let args: Vec<_> = args.iter().map(Into::into).collect();
    let mut exec = Process::new(program, &args, Duration::from_secs(5)).unwrap();
    exec.set_env("SERVER_LOG", log);
    exec
}

fn lines(log: &Path, what: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == what)
        .count()
}

/// Inputs: explicit decisions after a zero seed.
fn input(decisions: &[u8]) -> Vec<u8> {
    let mut input = vec![0u8; 8];
    input.extend_from_slice(decisions);
    input
}

fn inputs() -> Vec<Vec<u8>> {
    (0..20u8)
        .map(|i| input(&[i * 5 % 100, i % 10, 9, i % 7, 3, 9]))
        .collect()
}

fn hashes(exec: &mut Process) -> Vec<(u64, bool)> {
    inputs()
        .iter()
        .map(|i| {
            let r: RunRecord = exec.run(i);
            (r.trace_hash, r.signature().is_some())
        })
        .collect()
}

/// The mappings of the one fork server this test process has running
/// `program`.
fn server_mappings(program: &Path) -> usize {
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", server_of(program))).unwrap();
    maps.lines().count()
}

/// Pages of file mappings with permissions `perms` (`r-xp`: code;
/// `r--p`: read-only data) resident in the one fork server this test
/// process has running `program` (its child with that executable).
fn server_pages(program: &Path, perms: &str) -> usize {
    let smaps = std::fs::read_to_string(format!("/proc/{}/smaps", server_of(program))).unwrap();
    let mut code = false;
    let mut pages = 0;
    for line in smaps.lines() {
        let fields: Vec<_> = line.split_whitespace().collect();
        if fields
            .first()
            .is_some_and(|f| f.contains('-') && !f.ends_with(':'))
        {
            code =
                fields.get(1) == Some(&perms) && fields.get(5).is_some_and(|p| p.starts_with('/'));
        } else if code && fields.first() == Some(&"Rss:") {
            pages += fields[1].parse::<usize>().unwrap() / 4;
        }
    }
    pages
}

/// The pid of the one fork server this test process has running `program`
/// (its child with that executable).
fn server_of(program: &Path) -> String {
    let me = std::process::id().to_string();
    let servers: Vec<_> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .nth(1);
            ppid == Some(me.as_str())
                && std::fs::read_link(format!("/proc/{pid}/exe"))
                    .ok()
                    .as_deref()
                    == Some(program)
        })
        .collect();
    assert_eq!(servers.len(), 1, "{servers:?}");
    servers[0].clone()
}

#[test]
fn every_fork_server_mode_gives_the_same_runs() {
    let program = build_server("modes");
    let dir = std::env::temp_dir().join(format!("dst-c-server-logs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // Forking before main: main (and its setup) runs once per run, here
    // without the learning run.
    let log = dir.join("plain");
    let mut plain = executor(&program, &[], &log);
    plain.set_env("DST_FORKSERVER_LEARN", "0");
    let expected = hashes(&mut plain);
    assert_eq!(plain.launch_mode(), "fork server");
    assert_eq!(lines(&log, "setup"), 20);
    assert!(expected.iter().any(|(_, failed)| *failed), "some runs fail");
    assert!(expected.iter().any(|(_, failed)| !*failed), "some pass");
    // Code and read-only data: learned constants join their code mapping.
    let unlearned = server_pages(&program, "r-xp") + server_pages(&program, "r--p");
    let unlearned_mappings = server_mappings(&program);
    drop(plain);

    // With learning runs (the default): main runs up to four times more,
    // before the first run (fewer if they take over a second), and no run
    // changes; the server keeps mapped only the pages runs execute or read.
    let log = dir.join("learned");
    let mut learned = executor(&program, &[], &log);
    assert_eq!(hashes(&mut learned), expected);
    let setups = lines(&log, "setup");
    assert!((21..=24).contains(&setups), "{setups} setups");
    let pages = server_pages(&program, "r-xp") + server_pages(&program, "r--p");
    assert!(
        pages > 0 && pages * 2 < unlearned,
        "code and read-only pages mapped in the server: {pages} learned, {unlearned} without"
    );
    // The C library's constants (and the loader's) joined its code.
    let mappings = server_mappings(&program);
    assert!(
        mappings + 2 <= unlearned_mappings,
        "mappings in the server: {mappings} learned, {unlearned_mappings} without"
    );
    drop(learned);

    // DST_DEFER=1: the server forks at dst_setup_complete; setup runs once.
    let log = dir.join("defer");
    let mut deferred = executor(&program, &[], &log);
    deferred.set_defer(true);
    assert_eq!(hashes(&mut deferred), expected);
    assert_eq!(lines(&log, "setup"), 1);

    // Persistent mode: one process runs them all.
    let log = dir.join("persistent");
    let mut persistent = executor(&program, &["--persistent"], &log);
    assert_eq!(hashes(&mut persistent), expected);
    // The learning runs' starts, and the one child's.
    let starts = lines(&log, "start");
    assert!((2..=5).contains(&starts), "{starts} starts");

    // A crash kills only that run's child; the next run gets a fresh one,
    // and runs the same as before.
    let crash = persistent.run(&input(&[13]));
    match &crash.outcome {
        Outcome::Crash {
            cause, location, ..
        } => {
            assert_eq!(cause, "SIGSEGV");
            assert!(
                location.as_deref().unwrap_or_default().contains("workload"),
                "{location:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(hashes(&mut persistent), expected);
    assert_eq!(lines(&log, "start"), starts + 1);

    // Without a fork server (one process per run), the same runs again.
    let log = dir.join("spawn");
    let mut spawned = executor(&program, &[], &log);
    spawned.set_fork_server(false);
    assert_eq!(hashes(&mut spawned), expected);
    assert_eq!(spawned.launch_mode(), "one process per run");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The catalog index of fault "every run" (the runtime-registered site
/// evaluated twice) in each run of `inputs()`, and how many runs also used
/// the other fault.
fn every_run_fault_indices(exec: &mut Process) -> (Vec<u32>, usize) {
    let mut indices = Vec::new();
    let mut both = 0;
    for input in inputs() {
        let record: RunRecord = exec.run(&input);
        if record
            .signature()
            .is_some_and(|s| s.to_string().contains("SIGSEGV"))
        {
            continue;
        }
        let catalog = exec.catalog().len() as u32;
        let faults: Vec<_> = record.sites.iter().filter(|s| s.index >= catalog).collect();
        both += usize::from(faults.len() == 2);
        let every = faults
            .iter()
            .find(|s| s.evaluations == 2)
            .expect("every run's fault");
        indices.push(every.index);
    }
    (indices, both)
}

#[test]
fn the_server_registers_the_faults_its_learning_runs_used() {
    let program = build_server("faults");
    let log = std::env::temp_dir().join(format!("dst-c-server-faults-{}", std::process::id()));

    // Unlearned, each run registers its faults in the order it uses them:
    // "every run" comes second in runs that use the other fault first.
    let mut unlearned = executor(&program, &[], &log);
    unlearned.set_env("DST_FORKSERVER_LEARN", "0");
    let (indices, both) = every_run_fault_indices(&mut unlearned);
    assert!(
        both > 0 && both < indices.len(),
        "{both} of {} runs use both faults",
        indices.len()
    );
    assert!(indices.windows(2).any(|w| w[0] != w[1]), "{indices:?}");
    drop(unlearned);

    // Learned, the server registered both before forking: every run finds
    // them, at the same places.
    let mut learned = executor(&program, &[], &log);
    let (indices, _) = every_run_fault_indices(&mut learned);
    assert!(indices.windows(2).all(|w| w[0] == w[1]), "{indices:?}");
    let _ = std::fs::remove_file(&log);
}

#[test]
#[cfg(target_arch = "x86_64")]
fn a_fork_that_blocks_signals_does_not_stop_the_server() {
    let program = build_server("blocking-fork");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shim = std::env::temp_dir().join(format!("dst-c-fork-shim-{}.so", std::process::id()));
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&shim)
        .arg(manifest.join("tests/c/fork_blocks_signals.c"))
        .arg("-lpthread")
        .status()
        .unwrap();
    assert!(status.success());
    let log = std::env::temp_dir().join(format!("dst-c-server-blocking-{}", std::process::id()));
    let mut unlearned = executor(&program, &[], &log);
    unlearned.set_env("DST_FORKSERVER_LEARN", "0");
    unlearned.set_env("LD_PRELOAD", &shim);
    let expected = hashes(&mut unlearned);
    assert_eq!(unlearned.launch_mode(), "fork server");
    drop(unlearned);

    // Learning (the default) with that fork: the server still serves, and
    // gives the same runs.
    let mut learned = executor(&program, &[], &log);
    learned.set_env("LD_PRELOAD", &shim);
    assert_eq!(hashes(&mut learned), expected);
    assert_eq!(learned.launch_mode(), "fork server");
    let _ = std::fs::remove_file(&shim);
    let _ = std::fs::remove_file(&log);
}
