//! The ported cargo-fuzz targets, explored by dst: each bug is found,
//! shrunk and replayed identically; the bytes of a libFuzzer corpus file
//! reach the harness unchanged.

#[path = "../../common/explorer.rs"]
mod explorer;

use std::path::PathBuf;

use explorer::Campaign;
use serde_json::Value;

/// Explores `binary` until its first finding: the campaign, the finding's
/// folder and its replay (`replay --json`), checked to fail again alike.
fn first_finding(binary: &str, tag: &str) -> (Campaign, PathBuf, Value) {
    let campaign = Campaign::run(
        binary,
        tag,
        &["--runs", "100000", "--seed", "1", "--stop-on-finding"],
    );
    assert_eq!(campaign.status, 1, "{}", campaign.summary);
    let finding = &campaign.summary["findings"][0];
    let path = PathBuf::from(finding["path"].as_str().unwrap());
    let (replay, status) = campaign.replay(&path.join("input"));
    assert_eq!(status, 1, "{replay}");
    assert_eq!(replay["signature"], finding["signature"], "{replay}");
    assert_eq!(replay["determinism"]["verdict"], "stable", "{replay}");
    (campaign, path, replay)
}

#[test]
fn the_byte_target_slices_past_a_short_record() {
    let (_, path, replay) = first_finding(env!("CARGO_BIN_EXE_record"), "ported-record");
    assert_eq!(replay["signature"]["kind"], "crash", "{replay}");
    assert!(
        replay["signature"]["at"]
            .as_str()
            .unwrap()
            .contains("record.rs"),
        "{replay}"
    );
    // The shrunk input's harness bytes: a `K` record claiming more than it
    // holds.
    let input = std::fs::read(path.join("input")).unwrap();
    let data = dst::libfuzzer::decode(&input, dst::libfuzzer::DEFAULT_MAX_LEN);
    assert_eq!(data.first(), Some(&b'K'), "{data:?}");
    assert!(
        data.len() >= 2 && usize::from(data[1]) > data.len() - 2,
        "{data:?}"
    );
}

#[test]
fn the_structured_target_loses_money_on_a_self_transfer() {
    let (_, path, _) = first_finding(env!("CARGO_BIN_EXE_transfers"), "ported-transfers");
    let record: Value =
        serde_json::from_slice(&std::fs::read(path.join("finding.json")).unwrap()).unwrap();
    assert!(
        record["message"]
            .as_str()
            .unwrap()
            .contains("money is conserved"),
        "{record}"
    );
}

#[test]
fn a_libfuzzer_corpus_file_reaches_the_harness_unchanged() {
    let binary = env!("CARGO_BIN_EXE_record");
    let campaign = Campaign::run(binary, "ported-corpus", &["--runs", "1"]);
    let dir = std::env::temp_dir().join(format!("dst-ported-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("input");
    // A record claiming 9 bytes and holding 3 crashes; one holding its 3 passes.
    std::fs::write(&input, dst::libfuzzer::encode(b"K\x09abc")).unwrap();
    let (replay, status) = campaign.replay(&input);
    assert_eq!(
        (status, &replay["signature"]["kind"]),
        (1, &Value::from("crash")),
        "{replay}"
    );
    std::fs::write(&input, dst::libfuzzer::encode(b"K\x03abc")).unwrap();
    let (replay, status) = campaign.replay(&input);
    assert_eq!(status, 0, "{replay}");
}

#[test]
fn a_crashing_corpus_entry_is_a_finding_even_when_seeding_spends_the_budget() {
    // The crash ends the client's process (LibAFL's handler saves the
    // state and the crash); the restarted client goes on after that seed,
    // and the crash is reported although no mutation runs (`--runs 1`).
    let dir = std::env::temp_dir().join(format!("dst-ported-seed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("corpus")).unwrap();
    std::fs::write(
        dir.join("corpus/crash"),
        dst::libfuzzer::encode(b"K\x09abc"),
    )
    .unwrap();
    let campaign = Campaign::run_in(env!("CARGO_BIN_EXE_record"), &dir, &["--runs", "1"]);
    let summary = &campaign.summary;
    assert_eq!(campaign.status, 1, "{summary}");
    let findings = summary["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{summary}");
    assert!(
        findings[0]["signature"]["at"]
            .as_str()
            .unwrap()
            .contains("record.rs"),
        "{summary}"
    );
}
