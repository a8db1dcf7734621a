//! The explorer survives a target that hangs and one that aborts: both are
//! findings, replayed and shrunk in forked children.

#[path = "../../common/explorer.rs"]
mod explorer;

#[test]
fn hangs_and_aborts_are_findings() {
    let campaign = explorer::Campaign::run(
        env!("CARGO_BIN_EXE_framing"),
        "framing",
        &["--runs", "30000", "--seed", "2", "--timeout-ms", "50"],
    );
    assert_eq!(campaign.status, 1);
    let findings = campaign.summary["findings"].as_array().unwrap();
    let kinds: Vec<&str> = findings
        .iter()
        .map(|f| f["signature"]["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"timeout"), "{findings:?}");
    assert!(
        findings
            .iter()
            .any(|f| f["signature"]["kind"] == "crash" && f["signature"]["cause"] == "SIGABRT"),
        "{findings:?}"
    );
    for finding in findings {
        let path = std::path::Path::new(finding["path"].as_str().unwrap());
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path.join("finding.json")).unwrap()).unwrap();
        assert_eq!(record["flaky"], false, "{record}");
        assert!(
            record["input"]["shrunk_len"].as_u64().unwrap() <= 40,
            "{record}"
        );
    }
    // The campaign went on past the hang and the abort.
    assert!(campaign.summary["executions"].as_u64().unwrap() >= 30_000);
}
