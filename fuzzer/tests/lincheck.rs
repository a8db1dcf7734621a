//! `cargo dst-fuzz lincheck`: the verdict as the exit status (0, 1, 4 for
//! bad input with its line), on the Jepsen data in oracles/tests/data and on a JSON-lines
//! history written here.

use std::path::PathBuf;
use std::process::Command;

fn data(file: &str) -> PathBuf {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../oracles/tests/data/porcupine"
    ))
    .join(file);
    assert!(
        path.exists(),
        "test data missing: {} (oracles/tests/data/porcupine)",
        path.display()
    );
    path
}

fn lincheck(args: &[&str], file: &std::path::Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-dst-fuzz"))
        .arg("lincheck")
        .args(args)
        .arg(file)
        .output()
        .expect("run cargo-dst-fuzz");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn jepsen_logs_get_porcupines_verdicts_as_exit_statuses() {
    let (code, stdout, _) = lincheck(&["--model", "register"], &data("jepsen/etcd_002.log"));
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("linearizable"), "{stdout}");
    let (code, stdout, _) = lincheck(&["--model", "register"], &data("jepsen/etcd_000.log"));
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("not linearizable"), "{stdout}");
}

#[test]
fn a_jsonl_history_is_checked_and_explained_as_json() {
    let dir = std::env::temp_dir().join(format!("dst-lincheck-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("stale.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"client":1,"type":"invoke","f":"put","key":"x","value":"1","time":0}"#,
            "\n",
            r#"{"client":1,"type":"ok","f":"put","key":"x","value":"1","time":10}"#,
            "\n",
            r#"{"client":2,"type":"invoke","f":"get","key":"x","time":20}"#,
            "\n",
            r#"{"client":2,"type":"ok","f":"get","key":"x","value":"","time":30}"#,
            "\n",
        ),
    )
    .unwrap();
    let (code, stdout, stderr) = lincheck(&["--model", "kv", "--json"], &file);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let ops = report["verdict"].to_string();
    assert!(
        ops.contains("put") && ops.contains("get"),
        "both operations explain it: {report}"
    );

    std::fs::write(&file, "{\"client\":1,\"type\":\"invoke\",\"f\":\"put\",\"key\":\"x\",\"value\":\"1\",\"time\":0}\n{\"client\":1,\"type\":\"done\"}\n").unwrap();
    let (code, _, stderr) = lincheck(&["--model", "kv"], &file);
    assert_eq!(code, 4, "bad input: {stderr}");
    assert!(stderr.contains("line 2"), "names the line: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
