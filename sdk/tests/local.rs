//! Local mode, exercised in child processes (the SDK reads its environment
//! once per process): the test binary re-runs itself with `DST_CHILD` set.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dst_executors::{Executor, InProcess};
use serde_json::Value;

/// The target the children run.
fn scenario() {
    dst::lifecycle::setup_complete(&serde_json::json!({"nodes": 3}));
    let n = dst::random::below(100);
    let coin = dst::random::bool();
    dst::assert_always!(n < 100, "below stays in range", &n);
    for _ in 0..2 {
        dst::assert_always!(
            n > 1000,
            "an always that fails",
            &serde_json::json!({"n": n})
        );
    }
    dst::assert_sometimes!(coin, "the coin lands heads");
    dst::assert_reachable!("the scenario runs");
    dst::assert_sometimes_greater_than!(n, 90, "n is sometimes large");
    dst::assert_sometimes_all!({small: n < 10, heads: coin}, "small and heads together");
    if dst::fault!("lose a message") {
        dst::lifecycle::send_event("message lost", &n);
    }
    if n > 1000 {
        never_called();
    }
    let _ = dst::random::u64();
}

fn never_called() {
    dst::assert_sometimes!(true, "a sometimes nobody reaches");
}

/// Entry point of the children; a no-op in the parent test run.
#[test]
fn child() {
    if std::env::var_os("DST_CHILD").is_some() {
        scenario();
    }
}

fn run_child(env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env("DST_CHILD", "1");
    for var in [
        "DST_SEED",
        "DST_INPUT",
        "DST_OUTPUT",
        "DST_TRACE",
        "DST_ABORT_ON_FAILURE",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("run the test binary")
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dst-local-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect()
}

fn decisions(lines: &[Value]) -> Vec<(String, u64, u64, u64)> {
    lines
        .iter()
        .filter(|l| l["type"] == "decision")
        .map(|l| {
            (
                l["kind"].as_str().unwrap().to_string(),
                l["site"].as_u64().unwrap(),
                l["value"].as_u64().unwrap(),
                l["offset"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn jsonl_has_the_catalog_first_passes_failures_and_events() {
    let out = temp("basic.jsonl");
    let child = run_child(&[("DST_SEED", "7"), ("DST_OUTPUT", out.to_str().unwrap())]);
    assert!(
        child.status.success(),
        "a failing assertion does not stop the program"
    );
    let stderr = String::from_utf8_lossy(&child.stderr);
    let failures: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("assertion failed"))
        .collect();
    assert_eq!(failures.len(), 1, "one line per failing site: {stderr}");
    assert!(failures[0].contains("\"an always that fails\""));
    assert!(failures[0].contains("tests/local.rs:"));

    let lines = lines(&out);
    assert_eq!(lines[0]["type"], "run");
    assert_eq!(lines[0]["seed"], 7);
    let about =
        |msg: &str| -> Vec<&Value> { lines.iter().filter(|l| l["message"] == msg).collect() };
    let unreached = about("a sometimes nobody reaches");
    assert_eq!(unreached.len(), 1, "only its catalog line");
    assert_eq!(unreached[0]["hit"], false);
    assert_eq!(unreached[0]["must_hit"], true);
    assert_eq!(unreached[0]["kind"], "sometimes");

    let failing = about("an always that fails");
    assert_eq!(
        failing.len(),
        2,
        "catalog line, then the first failure only"
    );
    assert_eq!(failing[1]["hit"], true);
    assert_eq!(failing[1]["condition"], false);
    assert!(failing[1]["details"]["n"].is_u64());
    assert_eq!(failing[1]["location"]["file"], "sdk/tests/local.rs");

    let passing = about("below stays in range");
    assert_eq!(passing[1]["condition"], true);
    assert_eq!(about("the scenario runs")[1]["kind"], "reachable");
    let numeric = about("n is sometimes large");
    assert!(numeric[1]["details"]["right"] == 90.0, "{:?}", numeric[1]);
    assert!(lines.iter().any(|l| l["type"] == "event"
        && l["name"] == "setup_complete"
        && l["details"]["nodes"] == 3));
    assert!(
        !lines.iter().any(|l| l["type"] == "decision"),
        "decisions only with DST_TRACE"
    );
}

#[test]
fn a_seed_reproduces_and_a_fresh_seed_is_printed() {
    let trace = |env: &[(&str, &str)], name: &str| {
        let out = temp(name);
        let mut env = env.to_vec();
        let path = out.to_str().unwrap().to_string();
        env.push(("DST_OUTPUT", &path));
        env.push(("DST_TRACE", "1"));
        let child = run_child(&env);
        (
            decisions(&lines(&out)),
            String::from_utf8_lossy(&child.stderr).to_string(),
        )
    };
    let (a, _) = trace(&[("DST_SEED", "42")], "s1.jsonl");
    let (b, _) = trace(&[("DST_SEED", "42")], "s2.jsonl");
    assert_eq!(a.len(), 4, "below, bool, fault, u64");
    assert_eq!(a, b);
    let (c, _) = trace(&[("DST_SEED", "43")], "s3.jsonl");
    assert_ne!(a, c, "another seed, another run");

    let (fresh, stderr) = trace(&[], "s4.jsonl");
    let seed = stderr
        .lines()
        .find_map(|l| l.strip_prefix("dst: DST_SEED="))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the fresh seed is printed");
    let (again, _) = trace(&[("DST_SEED", seed)], "s5.jsonl");
    assert_eq!(fresh, again);
}

#[test]
fn dst_input_replays_the_explorer_run_exactly() {
    let input: Vec<u8> = vec![0, 0, 0, 0, 0, 0, 0, 0, 95, 1, 0xF7, 0xAB, 0xCD];
    let mut exec = InProcess::new(scenario);
    let record = exec.run(&input);
    let expected: Vec<(String, u64, u64, u64)> = record
        .decisions
        .iter()
        .map(|d| {
            (
                dst::decision::Kind::from_u8(d.kind)
                    .unwrap()
                    .name()
                    .to_string(),
                u64::from(d.site),
                d.value,
                d.offset,
            )
        })
        .collect();
    assert_eq!(expected[0].2, 95);
    assert_eq!(expected[2], ("fault".to_string(), expected[2].1, 1, 2));

    let file = temp("input.bin");
    std::fs::write(&file, &input).unwrap();
    let out = temp("replay.jsonl");
    let child = run_child(&[
        ("DST_INPUT", file.to_str().unwrap()),
        ("DST_OUTPUT", out.to_str().unwrap()),
        ("DST_TRACE", "1"),
    ]);
    assert!(child.status.success());
    assert_eq!(decisions(&lines(&out)), expected);
    let lines = lines(&out);
    assert!(
        lines.iter().any(|l| l["name"] == "message lost"),
        "the fault fired"
    );
}

#[test]
fn abort_on_failure_aborts() {
    let child = run_child(&[("DST_SEED", "1"), ("DST_ABORT_ON_FAILURE", "1")]);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(child.status.signal(), Some(6), "SIGABRT");
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(stderr.contains("assertion failed: always \"an always that fails\""));
}
