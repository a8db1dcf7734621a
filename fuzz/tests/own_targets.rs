//! dst explores its own parsers and finds nothing wrong.

use std::process::Command;

fn explore(binary: &str, tag: &str) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("dst-own-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let output = Command::new(binary)
        .args([
            "fuzz", "--runs", "20000", "--seed", "1", "--json", "--quiet", "--corpus",
        ])
        .arg(dir.join("corpus"))
        .arg("--findings")
        .arg(dir.join("findings"))
        .arg("--campaign")
        .arg(dir.join("campaign.json"))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn statuses(summary: &serde_json::Value) -> Vec<(String, String)> {
    summary["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["message"].as_str().unwrap().to_string(),
                p["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn region_validation_holds_under_exploration() {
    let summary = explore(env!("CARGO_BIN_EXE_region_header"), "region");
    for (message, status) in statuses(&summary) {
        assert_eq!(status, "passing", "{message}");
    }
}

#[test]
fn the_campaign_parser_never_panics() {
    let summary = explore(env!("CARGO_BIN_EXE_campaign_file"), "campaign");
    assert!(summary["findings"].as_array().unwrap().is_empty());
    for (message, status) in statuses(&summary) {
        assert_eq!(status, "passing", "{message}");
    }
}

#[test]
fn the_guest_loaders_never_panic_on_a_scribbled_elf() {
    let summary = explore(env!("CARGO_BIN_EXE_guest_elf"), "guest-elf");
    assert!(
        summary["findings"].as_array().unwrap().is_empty(),
        "{summary}"
    );
    for (message, status) in statuses(&summary) {
        assert_eq!(status, "passing", "{message}");
    }
}
