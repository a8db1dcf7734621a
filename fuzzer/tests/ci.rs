//! `cargo dst-fuzz ci` in its code-change mode, on examples/wasm/lease.wat
//! (a wasm module, so the job runs on every machine): a new finding fails
//! the job and is written as SARIF and JUnit; the next job, with the bug
//! still there, passes and lists it as still failing; with the bug fixed,
//! it is resolved; `--mode prune` keeps only the corpus entries that add
//! coverage; a corpus entry that fails in a way no stored finding does is a
//! regression, reported before any exploration.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{driver, root, text};

fn ci(dir: &Path, module: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec![
        "ci",
        "lease",
        "--wasm",
        module.to_str().unwrap(),
        "--json",
        "--quiet",
    ];
    args.extend(extra);
    let out = driver(dir, &args);
    let summary = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("a JSON summary ({e}): {}", text(&out)));
    (out.status.code(), summary)
}

#[test]
fn a_code_change_job_fails_only_on_new_findings() {
    let dir = std::env::temp_dir().join(format!("dst-ci-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let buggy = root().join("examples/wasm/lease.wat");
    let source = std::fs::read_to_string(&buggy).unwrap();
    assert!(source.contains("(then unreachable)"));
    let fixed = dir.join("fixed.wat");
    std::fs::write(&fixed, source.replace("(then unreachable)", "(then nop)")).unwrap();
    let (sarif, junit): (PathBuf, PathBuf) = (dir.join("out.sarif"), dir.join("out.xml"));

    // A new finding: exit 1, in the summary, SARIF and JUnit.
    let (code, summary) = ci(
        &dir,
        &buggy,
        &[
            "--runs",
            "200000",
            "--seed",
            "1",
            "--stop-on-finding",
            "--sarif",
            sarif.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(1), "{summary}");
    assert_eq!(summary["new"].as_array().unwrap().len(), 1, "{summary}");
    let report: Value = serde_json::from_slice(&std::fs::read(&sarif).unwrap()).unwrap();
    assert_eq!(report["version"], "2.1.0");
    let results = report["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{report}");
    assert_eq!(results[0]["ruleId"], "trap: unreachable", "{report}");
    let fingerprint = results[0]["partialFingerprints"]["dstSignature/v1"].clone();
    assert!(
        fingerprint.as_str().is_some_and(|f| f.len() == 16),
        "{report}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.starts_with("<?xml") && xml.contains("<testcase "),
        "{xml}"
    );
    assert!(xml.contains("failures=\"1\""), "{xml}");

    // The bug still there: the job passes, the finding still failing, and
    // SARIF names it with the same fingerprint.
    let (code, summary) = ci(
        &dir,
        &buggy,
        &[
            "--runs",
            "3000",
            "--seed",
            "2",
            "--sarif",
            sarif.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(summary["new"].as_array().unwrap().len(), 0, "{summary}");
    assert_eq!(
        summary["still_failing"].as_array().unwrap().len(),
        1,
        "{summary}"
    );
    let report: Value = serde_json::from_slice(&std::fs::read(&sarif).unwrap()).unwrap();
    assert_eq!(
        report["runs"][0]["results"][0]["partialFingerprints"]["dstSignature/v1"],
        fingerprint
    );

    // Fixed: resolved.
    let (code, summary) = ci(&dir, &fixed, &["--runs", "3000", "--seed", "3"]);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(
        summary["resolved"].as_array().unwrap().len(),
        1,
        "{summary}"
    );
    assert_eq!(
        summary["still_failing"].as_array().unwrap().len(),
        0,
        "{summary}"
    );

    // Prune: the corpus keeps only entries that add coverage.
    let corpus = dir.join("corpus/lease");
    let count = || std::fs::read_dir(&corpus).unwrap().count();
    let before = count();
    let (code, summary) = ci(&dir, &buggy, &["--mode", "prune"]);
    assert_eq!(code, Some(0), "{summary}");
    let kept = summary["kept"].as_u64().unwrap() as usize;
    assert_eq!(
        kept + summary["dropped"].as_u64().unwrap() as usize,
        before,
        "{summary}"
    );
    assert!(
        kept >= 1 && kept < before,
        "{before} entries pruned to {kept}"
    );
    assert_eq!(count(), kept);
    let (code, summary) = ci(&dir, &buggy, &["--mode", "prune"]);
    assert_eq!(
        (code, summary["dropped"].as_u64()),
        (Some(0), Some(0)),
        "pruned already: {summary}"
    );

    // A corpus entry that fails with no finding stored: a regression,
    // reported before exploring (no executions).
    let findings = dir.join("findings/lease");
    let folder = std::fs::read_dir(&findings)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let input = std::fs::read(folder.join("input")).unwrap();
    std::fs::remove_dir_all(&findings).unwrap();
    std::fs::write(dir.join("corpus/lease/regression"), input).unwrap();
    let (code, summary) = ci(&dir, &buggy, &["--runs", "3000"]);
    assert_eq!(code, Some(1), "{summary}");
    assert_eq!(summary["new"].as_array().unwrap().len(), 1, "{summary}");
    assert_eq!(summary["executions"], 0, "failed fast: {summary}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--mode batch` over two libFuzzer harnesses (`--cmd -- magic journal`),
/// then `--mode merge` of one's corpus moved aside.
#[test]
fn a_batch_job_runs_every_program_and_a_merge_adds_only_what_adds_coverage() {
    let dir = std::env::temp_dir().join(format!("dst-ci-batch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let magic = common::libfuzzer_harness(&dir, "magic");
    let journal = common::libfuzzer_harness(&dir, "journal");
    let (sarif, junit) = (dir.join("batch.sarif"), dir.join("batch.xml"));
    let batch = |runs: &str| {
        let out = driver(
            &dir,
            &[
                "ci",
                "--mode",
                "batch",
                "--runs",
                runs,
                "--stop-on-finding",
                "--json",
                "--sarif",
                sarif.to_str().unwrap(),
                "--junit",
                junit.to_str().unwrap(),
                "--cmd",
                "--defer",
                "--",
                magic.to_str().unwrap(),
                journal.to_str().unwrap(),
            ],
        );
        let summary: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        (out.status.code(), summary, text(&out))
    };

    // Both have a bug: each target's job finds its own; one SARIF run
    // holds both results, one JUnit document both suites.
    let (code, summary, shown) = batch("30000");
    assert_eq!(code, Some(1), "{shown}");
    let targets = summary["targets"].as_array().unwrap();
    let names: Vec<&str> = targets
        .iter()
        .map(|t| t["target"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["magic", "journal"], "{shown}");
    for t in targets {
        assert_eq!(t["status"], 1, "{t}");
        assert_eq!(t["summary"]["new"].as_array().unwrap().len(), 1, "{t}");
    }
    let log: Value = serde_json::from_slice(&std::fs::read(&sarif).unwrap()).unwrap();
    assert_eq!(log["runs"].as_array().unwrap().len(), 1);
    assert_eq!(
        log["runs"][0]["results"].as_array().unwrap().len(),
        2,
        "{log}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("name=\"dst: magic\"") && xml.contains("name=\"dst: journal\""),
        "{xml}"
    );

    // Again, bugs unfixed: nothing new, both still failing, exit 0.
    let (code, summary, shown) = batch("300");
    assert_eq!(code, Some(0), "{shown}");
    assert_eq!(summary["new"], 0, "{summary}");
    for t in summary["targets"].as_array().unwrap() {
        assert_eq!(
            t["summary"]["still_failing"].as_array().unwrap().len(),
            1,
            "{t}"
        );
    }

    // Merge: magic's corpus moved aside comes back without the entries
    // that add nothing; merged again, nothing is added.
    let corpus = dir.join("corpus").join("magic");
    let aside = dir.join("aside");
    std::fs::rename(&corpus, &aside).unwrap();
    let count = |d: &Path| std::fs::read_dir(d).map_or(0, |r| r.count());
    let merge = |from: &Path| {
        driver(
            &dir,
            &[
                "ci",
                "--mode",
                "merge",
                "--from",
                from.to_str().unwrap(),
                "--json",
                "--cmd",
                "--defer",
                "--",
                magic.to_str().unwrap(),
            ],
        )
    };
    let first = merge(&aside);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let summary: Value = serde_json::from_slice(&first.stdout).unwrap();
    let added = summary["added"].as_u64().unwrap() as usize;
    assert!(added > 0 && added == count(&corpus), "{summary}");
    assert!(added <= count(&aside), "{summary}");
    let second = merge(&aside);
    let summary: Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(summary["added"], 0, "{summary}");
    assert_eq!(count(&corpus), added);
    let missing = merge(&dir.join("no-such-folder"));
    assert_eq!(missing.status.code(), Some(4), "{}", text(&missing));
    let _ = std::fs::remove_dir_all(&dir);
}
