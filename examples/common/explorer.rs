//! Shared by the examples' tests: run a target binary's explorer with fixed
//! seeds and a budget, then read its JSON summary and its findings.

#![allow(dead_code)] // each test uses part of it

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// One finished campaign in a fresh temporary folder.
pub struct Campaign {
    pub binary: PathBuf,
    pub summary: Value,
    pub status: i32,
}

impl Campaign {
    pub fn run(binary: &str, tag: &str, args: &[&str]) -> Campaign {
        let dir = std::env::temp_dir().join(format!("dst-example-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Campaign::run_in(binary, &dir, args)
    }

    /// A campaign keeping its corpus, findings and campaign file in `dir`
    /// (a corpus already there is its seeds).
    pub fn run_in(binary: &str, dir: &Path, args: &[&str]) -> Campaign {
        let output = Command::new(binary)
            .arg("fuzz")
            .args(args)
            .args(["--json", "--quiet", "--corpus"])
            .arg(dir.join("corpus"))
            .arg("--findings")
            .arg(dir.join("findings"))
            .arg("--campaign")
            .arg(dir.join("campaign.json"))
            .output()
            .expect("run the target binary");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let summary: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "no JSON summary ({e}); stderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
        Campaign {
            binary: PathBuf::from(binary),
            summary,
            status: output.status.code().unwrap_or(-1),
        }
    }

    /// The finding for property `message`; panics if there is none.
    pub fn finding(&self, message: &str) -> (PathBuf, Value) {
        let findings = self.summary["findings"].as_array().expect("findings list");
        let summary = findings
            .iter()
            .find(|f| f["signature"]["message"] == message)
            .unwrap_or_else(|| panic!("no finding for {message:?}: {findings:?}"));
        let path = PathBuf::from(summary["path"].as_str().unwrap());
        let record: Value =
            serde_json::from_slice(&std::fs::read(path.join("finding.json")).unwrap()).unwrap();
        (path, record)
    }

    /// `replay FILE --json` on the same binary.
    pub fn replay(&self, input: &Path) -> (Value, i32) {
        let output = Command::new(&self.binary)
            .args(["replay", "--json"])
            .arg(input)
            .output()
            .unwrap();
        let value = serde_json::from_slice(&output.stdout).expect("replay prints JSON");
        (value, output.status.code().unwrap_or(-1))
    }

    /// The messages of the summary's property table.
    pub fn properties(&self) -> Vec<String> {
        self.summary["properties"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["message"].as_str().unwrap().to_string())
            .collect()
    }

    /// The status of property `message` in the summary's table.
    pub fn status_of(&self, message: &str) -> String {
        self.summary["properties"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["message"] == message)
            .map(|p| p["status"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no property {message:?}"))
    }
}

/// Checks what every example's finding must show: a failing must-hold
/// property, a stable replay of the shrunk input with the same signature,
/// a small shrunk input, and exit status 1.
pub fn check_finding(campaign: &Campaign, message: &str, max_shrunk: u64) -> Value {
    assert_eq!(campaign.status, 1, "a finding makes the exit status 1");
    assert_eq!(campaign.status_of(message), "failing");
    let (path, record) = campaign.finding(message);
    assert_eq!(record["kind"], "assertion_failure");
    assert_eq!(record["message"], message);
    assert_eq!(record["flaky"], false);
    let shrunk = record["input"]["shrunk_len"].as_u64().unwrap();
    assert!(
        shrunk <= max_shrunk,
        "shrunk input has {shrunk} bytes: {record}"
    );
    assert!(
        shrunk
            <= record["input"]["original_len"]
                .as_u64()
                .unwrap()
                .max(8 + max_shrunk)
    );
    let input = std::fs::read(path.join("input")).unwrap();
    assert_eq!(input.len() as u64, shrunk);
    let (replay, status) = campaign.replay(&path.join("input"));
    assert_eq!(status, 1, "replaying a failing input exits 1");
    assert_eq!(replay["signature"]["message"], message);
    assert_eq!(replay["determinism"]["verdict"], "stable");
    assert!(!replay["decisions"].as_array().unwrap().is_empty());
    // The same input, in local mode, in the plain binary (as under a debugger).
    let local = Command::new(&campaign.binary)
        .arg("run")
        .env("DST_INPUT", path.join("input"))
        .output()
        .unwrap();
    assert_eq!(local.status.code(), Some(1), "the local run fails too");
    let stderr = String::from_utf8_lossy(&local.stderr);
    assert!(stderr.contains("assertion failed: "), "{stderr}");
    assert!(stderr.contains(message), "{stderr}");
    assert!(
        record["reproduce"]["debugger"]
            .as_str()
            .unwrap()
            .starts_with("DST_INPUT=")
    );
    record
}
