//! dst explores its own parsers and finds nothing wrong.

#[path = "../../examples/common/explorer.rs"]
mod explorer;

fn explore(binary: &str, tag: &str) -> serde_json::Value {
    let campaign = explorer::Campaign::run(binary, tag, &["--runs", "20000", "--seed", "1"]);
    assert_eq!(campaign.status, 0, "{}", campaign.summary);
    campaign.summary
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

/// Every property of `binary` passes and it reports no finding.
fn holds(binary: &str, tag: &str) {
    let summary = explore(binary, tag);
    assert!(
        summary["findings"].as_array().unwrap().is_empty(),
        "{summary}"
    );
    let statuses = statuses(&summary);
    assert!(!statuses.is_empty(), "{summary}");
    for (message, status) in statuses {
        assert_eq!(status, "passing", "{message}");
    }
}

#[test]
fn region_validation_holds_under_exploration() {
    holds(env!("CARGO_BIN_EXE_region_header"), "region");
}

#[test]
fn the_campaign_parser_never_panics() {
    holds(env!("CARGO_BIN_EXE_campaign_file"), "campaign");
}

#[test]
fn the_guest_loaders_never_panic_on_a_scribbled_elf() {
    holds(env!("CARGO_BIN_EXE_guest_elf"), "guest-elf");
}

#[test]
fn the_decision_decoder_and_run_records_hold_under_exploration() {
    holds(env!("CARGO_BIN_EXE_decision_decoder"), "decisions");
}

#[test]
fn damaged_finding_files_are_read_and_reported_safely() {
    holds(env!("CARGO_BIN_EXE_finding_file"), "finding");
}

#[test]
fn the_wasm_loader_never_panics_on_a_scribbled_module() {
    holds(env!("CARGO_BIN_EXE_wasm_module"), "wasm");
}

#[test]
fn the_history_readers_never_panic_on_a_damaged_log() {
    holds(env!("CARGO_BIN_EXE_history"), "history");
}

#[test]
fn libfuzzer_flags_and_options_files_are_read_or_refused_in_one_line() {
    holds(env!("CARGO_BIN_EXE_libfuzzer_flags"), "libfuzzer");
}
