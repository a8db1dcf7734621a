//! The explorer finds each program's bug within a fixed budget (fixed
//! seeds), and the finding replays with its schedule.

#[path = "../../common/explorer.rs"]
mod explorer;

use std::time::Duration;

use dst_executors::InProcess;
use dst_fuzz::explore::{Options, explore_here};

/// Explores `name` in-process with explorer seed `seed` for at most
/// `runs` executions; returns the executions to the first finding and
/// its property.
fn explore(name: &str, runs: u64, seed: u64) -> Option<(u64, String)> {
    // LibAFL's in-process executor hooks are per process: one campaign at
    // a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = std::env::temp_dir().join(format!(
        "dst-concurrency-{name}-{seed}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let mut options = Options::new(name, &dir);
    options.runs = Some(runs);
    options.seed = seed;
    options.timeout = Duration::from_secs(5);
    options.shrink_budget = 500;
    options.stop_on_finding = true;
    let name = name.to_string();
    let subject = InProcess::new(move || dst_example_concurrency::run(&name));
    let summary = explore_here(subject, &options).expect("the campaign runs");
    let _ = std::fs::remove_dir_all(&dir);
    summary
        .findings
        .first()
        .map(|f| (f.executions, f.signature.to_string()))
}

fn finds(name: &str, runs: u64, message: &str) {
    let (executions, signature) =
        explore(name, runs, 1).unwrap_or_else(|| panic!("{name}: no finding in {runs} runs"));
    println!("{name}: found after {executions} executions: {signature}");
    assert!(signature.contains(message), "{name}: {signature}");
    assert!(executions <= runs);
}

#[test]
fn account() {
    finds("account", 2_000, "account: the balance");
}

#[test]
fn lazy01() {
    finds("lazy01", 2_000, "lazy01: the checker never sees 3");
}

#[test]
fn deadlock01() {
    finds("deadlock01", 2_000, "dst: deadlock");
}

#[test]
fn stack() {
    finds("stack", 2_000, "stack: no pop underflows");
}

#[test]
fn twostage() {
    finds("twostage", 2_000, "twostage: the reader");
}

/// The reader must run inside one writer's window among 49 writers: site
/// priorities (a lock site ranked below the reader's) reach it where one
/// thread's priority among fifty would not.
#[test]
fn twostage_50() {
    finds("twostage_50", 2_000, "twostage: the reader");
}

#[test]
fn twostage_100() {
    finds("twostage_100", 2_000, "twostage: the reader");
}

#[test]
fn reorder_5() {
    finds("reorder_5", 4_000, "reorder: the checker");
}

#[test]
fn reorder_20() {
    finds("reorder_20", 2_000, "reorder: the checker");
}

#[test]
fn reorder_50() {
    finds("reorder_50", 2_000, "reorder: the checker");
}

#[test]
fn wsq() {
    finds("wsq", 4_000, "wsq: every item");
}

/// The command-line path: `fuzz` finds the deadlock, the shrunk input
/// replays stably, and `replay` shows the schedule with its preemption.
#[test]
fn replay_shows_the_schedule_of_a_deadlock() {
    let campaign = explorer::Campaign::run(
        env!("CARGO_BIN_EXE_deadlock01"),
        "deadlock01",
        &["--runs", "5000", "--seed", "1", "--stop-on-finding"],
    );
    let message = "dst: deadlock (every live thread is blocked)";
    let record = explorer::check_finding(&campaign, message, 16);
    // A threaded target: the SDK's properties watched it and are listed.
    assert_eq!(campaign.status_of(message), "failing");
    assert_eq!(
        campaign.status_of("dst: a thread outlives the target body"),
        "passing"
    );
    let schedule = record["schedule"].as_array().expect("a schedule");
    assert!(
        schedule.iter().any(|s| !s["preempts"].is_null()),
        "the deadlock needs a preemption: {record}"
    );
    let threads = record["details"]["threads"].as_array().unwrap();
    assert!(threads.iter().all(|t| t["state"] == "blocked"), "{record}");
    let locking = threads.iter().filter(|t| t["op"] == "lock").count();
    assert_eq!(
        locking, 2,
        "two threads wait for each other's lock: {record}"
    );

    let (path, _) = campaign.finding(message);
    let text = std::process::Command::new(&campaign.binary)
        .arg("replay")
        .arg(path.join("input"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains("schedule ("), "{stdout}");
    assert!(stdout.contains("<- preempts thread"), "{stdout}");
    assert!(stdout.contains("lock"), "{stdout}");
}

/// A controlled thread that overflows its 64 KiB stack (`src/bin/overflow.rs`)
/// is a crash finding, placed in the recursing function and replayed, while
/// the explorer carries on; not a hang or the explorer's own death.
#[test]
fn a_stack_overflow_is_a_finding() {
    let campaign = explorer::Campaign::run(
        env!("CARGO_BIN_EXE_overflow"),
        "overflow",
        &["--runs", "500", "--seed", "1"],
    );
    assert_eq!(campaign.status, 1, "{}", campaign.summary);
    let findings = campaign.summary["findings"].as_array().unwrap();
    let finding = findings
        .iter()
        .find(|f| f["signature"]["cause"] == "stack overflow")
        .unwrap_or_else(|| panic!("no stack overflow finding: {findings:?}"));
    let at = finding["signature"]["at"].as_str().unwrap();
    assert!(at.contains("descend") && at.contains("overflow.rs"), "{at}");
    assert!(
        campaign.summary["executions"].as_u64().unwrap() >= 500,
        "the campaign went on after the crash: {}",
        campaign.summary
    );
    let input = std::path::PathBuf::from(finding["path"].as_str().unwrap()).join("input");
    let (replay, status) = campaign.replay(&input);
    assert_eq!(status, 1, "{replay}");
    assert_eq!(replay["signature"]["cause"], "stack overflow", "{replay}");
}
