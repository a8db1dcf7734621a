//! Campaign files on disk: `--jobs 2` (also where the campaign may run on
//! one core only), resuming after `kill -9`, and clear errors with
//! distinct exit statuses for bad files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const BANK: &str = env!("CARGO_BIN_EXE_bank");

fn temp(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dst-bank-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fuzz_args(dir: &Path) -> Vec<String> {
    [
        "--corpus",
        "corpus",
        "--findings",
        "findings",
        "--campaign",
        "campaign.json",
    ]
    .iter()
    .map(|s| {
        if s.starts_with("--") {
            s.to_string()
        } else {
            dir.join(s).display().to_string()
        }
    })
    .collect()
}

fn bank(args: &[&str], dir: &Path) -> Output {
    Command::new(BANK)
        .args(args)
        .args(fuzz_args(dir))
        .output()
        .unwrap()
}

/// The executions in the saved campaign, 0 while there is none.
fn saved_executions(dir: &Path) -> u64 {
    std::fs::read(dir.join("campaign.json"))
        .ok()
        .and_then(|text| serde_json::from_slice::<serde_json::Value>(&text).ok())
        .and_then(|value| value["executions"].as_u64())
        .unwrap_or(0)
}

fn campaign_executions(dir: &Path) -> u64 {
    let text = std::fs::read(dir.join("campaign.json")).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&text).unwrap();
    value["executions"].as_u64().unwrap()
}

#[test]
fn two_jobs_on_a_machine_that_allows_one_core_run_one_client_there() {
    // As under `taskset -c N` or a container's cpuset: the campaign may run
    // on the core this test runs on, and on no other. Before, the clients
    // were given cores outside that set, which LibAFL's launcher skips: no
    // client started and the broker waited for ever.
    let dir = temp("one-core");
    let mut command = Command::new(BANK);
    command
        .args([
            "fuzz", "--jobs", "2", "--runs", "2000", "--seed", "5", "--json", "--quiet",
        ])
        .args(fuzz_args(&dir))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec the closure only calls sched_getcpu and
    // sched_setaffinity, both async-signal-safe system calls, on a local set.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(|| {
            let cpu = libc::sched_getcpu().max(0) as usize;
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    // A safety net only: the campaign runs 2,000 executions.
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("no client started on the one core allowed: the campaign never ended");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--jobs 2 exceeds the 1 cores; running 1 clients"),
        "{stderr}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}; stderr: {stderr}"));
    assert!(
        summary["executions"].as_u64().unwrap() >= 2_000,
        "{summary}"
    );
}

#[test]
fn two_jobs_share_one_campaign() {
    let dir = temp("jobs");
    let output = bank(
        &[
            "fuzz", "--jobs", "2", "--runs", "30000", "--seed", "5", "--json", "--quiet",
        ],
        &dir,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let summary: serde_json::Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}; stderr: {stderr}"));
    let clients = if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
        2
    } else {
        1
    };
    // Each client runs its own budget; the merged campaign counts them all.
    let executions = summary["executions"].as_u64().unwrap();
    assert!(executions >= 30_000 * clients, "{executions} executions");
    assert_eq!(campaign_executions(&dir), executions);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".client"))
        .collect();
    assert!(leftovers.is_empty(), "client parts are merged and removed");
    assert_eq!(output.status.code(), Some(1), "the bug is found: {stderr}");
    assert_eq!(summary["findings"].as_array().unwrap().len(), 1);
}

#[test]
fn stop_on_finding_stops_every_client() {
    let dir = temp("stop");
    // Each client may run 2,000,000 executions; the first finding (about
    // a thousand in) must end the whole campaign, not only its client.
    let output = bank(
        &[
            "fuzz",
            "--jobs",
            "2",
            "--runs",
            "2000000",
            "--stop-on-finding",
            "--json",
            "--quiet",
        ],
        &dir,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let summary: serde_json::Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}; stderr: {stderr}"));
    assert_eq!(output.status.code(), Some(1), "{summary}");
    let executions = summary["executions"].as_u64().unwrap();
    assert!(
        executions < 2_000_000,
        "{executions} executions: a client ran on"
    );
}

#[test]
fn a_killed_campaign_resumes() {
    let dir = temp("kill");
    let mut child = Command::new(BANK)
        .args(["fuzz", "--time", "60s", "--seed", "9", "--quiet"])
        .args(fuzz_args(&dir))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once it has saved the campaign (it does once a second),
    // however long that takes on a busy machine; the deadline is only a
    // safety net.
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    while saved_executions(&dir) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the campaign saved nothing in 300 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let saved = campaign_executions(&dir);
    assert!(saved > 0, "the campaign was saved before the kill");
    let corpus: Vec<PathBuf> = std::fs::read_dir(dir.join("corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!corpus.is_empty());
    assert!(
        corpus
            .iter()
            .all(|p| !p.to_string_lossy().ends_with(".tmp")),
        "no torn temporary files are left as corpus entries"
    );

    let again = bank(&["fuzz", "--runs", "2000", "--quiet", "--json"], &dir);
    let summary: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    let this_run = summary["executions"].as_u64().unwrap();
    assert_eq!(
        campaign_executions(&dir),
        saved + this_run,
        "the campaign goes on from where it was"
    );
    assert!(summary["corpus"].as_u64().unwrap() > 0);
}

#[test]
fn bad_files_are_clear_errors() {
    let dir = temp("bad");
    std::fs::write(dir.join("campaign.json"), b"{\"version\": 1, \"executi").unwrap();
    let corrupt = bank(&["fuzz", "--runs", "10"], &dir);
    assert_eq!(corrupt.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&corrupt.stderr);
    let last = stderr.lines().last().unwrap();
    assert!(last.contains("campaign.json is corrupt"), "{stderr}");

    let dir = temp("unwritable");
    std::fs::write(dir.join("findings"), b"a file where a folder should be").unwrap();
    let unwritable = bank(&["fuzz", "--runs", "10"], &dir);
    assert_eq!(unwritable.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&unwritable.stderr).contains("cannot write to"));

    let dir = temp("corpus");
    std::fs::create_dir_all(dir.join("corpus/nested")).unwrap();
    let nested = bank(&["fuzz", "--runs", "10"], &dir);
    assert_eq!(nested.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&nested.stderr).contains("not a valid input"));

    let missing = Command::new(BANK)
        .args(["replay", "/no/such/finding"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read /no/such/finding"));

    let usage = Command::new(BANK)
        .args(["fuzz", "--runs", "many"])
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
}
