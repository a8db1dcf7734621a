//! The finding pipeline loses no failure: one that does not come back when
//! its input is replayed is not reported, and the next input that fails the
//! same way gets its own chance, rather than the signature being taken for
//! one already reported.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use dst_executors::InProcess;
use dst_fuzz::explore::{Options, explore_here};

/// Sevens drawn so far in this process.
static SEVENS: AtomicU32 = AtomicU32::new(0);

/// Breaks on the first seven it draws, then not again until its 1000th:
/// the first failure's replays (and whatever else runs before them) all
/// pass, as a flaky target's, or a busy machine's, would.
fn flaky_seven() {
    let value = dst::random::below(16);
    let broken = value == 7 && {
        let n = SEVENS.fetch_add(1, Ordering::Relaxed);
        n == 0 || n >= 1000
    };
    dst::assert_always!(!broken, "seven breaks it");
}

#[test]
fn a_failure_that_did_not_replay_is_found_again_later() {
    let dir = std::env::temp_dir().join(format!("dst-findings-flaky-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut options = Options::new("flaky", &dir);
    options.runs = Some(100_000);
    options.seed = 4;
    options.timeout = Duration::from_secs(10);
    options.shrink_budget = 1000;
    options.stop_on_finding = true;
    let summary = explore_here(InProcess::new(flaky_seven), &options).expect("the campaign runs");
    let sevens = SEVENS.load(Ordering::Relaxed);
    assert!(sevens > 1000, "{sevens} sevens in {}", summary.executions);
    let [finding] = summary.findings.as_slice() else {
        panic!("one finding: {:?}", summary.findings);
    };
    assert_eq!(
        finding.signature.to_string(),
        "property \"seven breaks it\" failed"
    );
    // Found when sevens broke it again, and then it replayed every time.
    assert!(!finding.flaky);
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(finding.path.join("finding.json")).unwrap()).unwrap();
    assert_eq!(record["reproduced"]["failed"], 5, "{record}");
    let _ = std::fs::remove_dir_all(&dir);
}
