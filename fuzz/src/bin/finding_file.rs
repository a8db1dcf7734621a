//! A damaged `finding.json` (a disk that filled up, an edit by hand, a
//! file from another version), read by everything that reads findings:
//! the summary reader, the HTML report, SARIF and JUnit. None may panic,
//! and what they write must stay well-formed: the text of the file is
//! data, never markup, in the page and in the XML.

use std::path::PathBuf;

use dst_fuzz_targets::scribble_text;
use dst_kernel::{Campaign, finding};
use serde_json::{Value, json};

/// Characters that matter to JSON, HTML and XML.
const ALPHABET: &[u8] = b"<>&\"'\\{}[]:,0123456789 \x01\x0b-eE.nulltrue";

/// A finding record as the finding pipeline writes it.
fn record() -> Value {
    json!({
        "kind": "assertion_failure",
        "property": "always",
        "message": "the balance never goes negative",
        "condition": "balance >= 0",
        "details": {"balance": -3},
        "location": "src/bank.rs:41:9",
        "signature": {"kind": "property", "message": "the balance never goes negative"},
        "flaky": false,
        "determinism": "deterministic",
        "reproduced": {"replays": 3, "failed": 3},
        "found_at": {"executions": 1234, "seconds": 0.5},
        "input": {"original_len": 40, "shrunk_len": 12, "prefix_len": 10},
        "shrink_runs": 50,
        "decision_count": 2,
        "faults_fired": ["drop the reply"],
        "decisions": [
            {"index": 0, "kind": "fault", "value": 1, "offset": 0, "width": 1,
             "location": "src/bank.rs:30:5", "fault": "drop the reply"},
            {"index": 1, "kind": "below", "value": 7, "offset": 1, "width": 1,
             "location": "src/bank.rs:33:13", "fault": null}
        ],
        "schedule": [],
        "reproduce": {
            "explain": "bank replay findings/x/input",
            "debugger": "DST_INPUT=findings/x/input gdb --args bank run"
        }
    })
}

/// A scratch folder for this run, removed at its end (the explorer may
/// start a process per run: a folder per process would pile up in /tmp).
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dst-own-finding-file-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("findings").join("f")).expect("a scratch folder");
    dir
}

/// Characters XML 1.0 does not allow in a document.
fn forbidden_in_xml(c: char) -> bool {
    matches!(c, '\0'..='\x08' | '\x0b' | '\x0c' | '\x0e'..='\x1f' | '\u{fffe}' | '\u{ffff}')
}

dst_fuzz::target!(|| {
    let valid = serde_json::to_string_pretty(&record()).expect("serializes");
    let mut text = scribble_text(&valid, 6, if dst::random::bool() { ALPHABET } else { &[] });
    if dst::random::below(4) == 0 {
        // Markup where a string was.
        let at = dst::random::below(text.len() as u64 + 1) as usize;
        if text.is_char_boundary(at) {
            text.insert_str(at, "<script>alert(1)</script>");
        }
    }
    let dir = scratch();
    let findings = dir.join("findings");
    let folder = findings.join("f");
    let stats = dir.join("stats");
    let _ = std::fs::remove_dir_all(&stats);
    std::fs::write(folder.join("finding.json"), &text).expect("writes");
    std::fs::write(folder.join("input"), [0u8; 12]).expect("writes");

    let summary = finding::read_summary(&folder);
    dst::assert_sometimes!(summary.is_some(), "a damaged finding still reads");
    dst::assert_sometimes!(summary.is_none(), "a damaged finding is not read");

    let campaign = Campaign::new(dst::catalog::sites());
    let document = dst_fuzz::report::document("own", &campaign, &findings, &stats);
    let page = dst_fuzz::report::html::render(&document);
    dst::assert_always!(
        !page.contains("<script"),
        "no markup from a finding gets into the report"
    );

    let failing: Vec<finding::FindingFile> = finding::FindingFile::parse(text.as_bytes())
        .into_iter()
        .collect();
    let sarif = dst_fuzz::ci::sarif(&failing);
    let sarif: Option<Value> = serde_json::from_str(&sarif).ok();
    dst::assert_always!(
        sarif.is_some_and(|s| s["runs"][0]["results"]
            .as_array()
            .is_some_and(|r| r.len() == failing.len())),
        "SARIF is JSON with one result per finding"
    );
    let properties = dst_fuzz::report::json(&campaign);
    let name: String = text.chars().take(40).collect();
    let junit = dst_fuzz::ci::junit(&name, &properties, &failing);
    dst::assert_always!(
        !junit.chars().any(forbidden_in_xml) && !junit.contains("<script"),
        "JUnit XML holds only characters XML allows, and no markup from a finding"
    );
    let _ = std::fs::remove_dir_all(&dir);
});
