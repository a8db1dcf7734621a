//! Every history of Porcupine's test data gets the verdict Porcupine's own
//! test suite asserts (`expected.tsv`): etcd logs against the register,
//! kv logs against the key-value map, partitioned and (for the small ones)
//! not.

use std::path::{Path, PathBuf};

use dst_oracles::format::parse;
use dst_oracles::models::{KvMap, Register};
use dst_oracles::{CheckOptions, Format, ModelName, Verdict, lincheck_file};

fn data_dir() -> PathBuf {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/porcupine"));
    assert!(
        dir.join("expected.tsv").is_file(),
        "the Porcupine test data is missing: expected {}/expected.tsv \
         (oracles/tests/data/porcupine)",
        dir.display()
    );
    dir.to_path_buf()
}

fn expected() -> Vec<(String, bool)> {
    let text = std::fs::read_to_string(data_dir().join("expected.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (file, verdict) = l.split_once('\t').expect("file<TAB>verdict");
            (file.to_string(), verdict.trim().parse::<bool>().unwrap())
        })
        .collect()
}

#[test]
fn every_verdict_matches_porcupine() {
    let cases = expected();
    assert_eq!(cases.len(), 108, "102 etcd logs and 6 kv histories");
    let mut wrong = Vec::new();
    for (file, linearizable) in &cases {
        let model = if file.starts_with("jepsen/") {
            ModelName::Register
        } else {
            ModelName::Kv
        };
        let report =
            lincheck_file(model, &data_dir().join(file), None).unwrap_or_else(|e| panic!("{e}"));
        let expected_format = if model == ModelName::Register {
            Format::Jepsen
        } else {
            Format::Kv
        };
        assert_eq!(report.format, expected_format, "{file}");
        match (&report.verdict, linearizable) {
            (Verdict::Linearizable, true) | (Verdict::Violation(_), false) => {}
            (verdict, _) => wrong.push(format!("{file}: expected {linearizable}, got {verdict}")),
        }
        if let Verdict::Violation(explanation) = &report.verdict {
            assert!(!explanation.operations.is_empty(), "{file}");
            assert!(
                explanation.operations.len() < report.operations,
                "{file}: the explanation is not smaller than the history"
            );
        }
    }
    assert!(wrong.is_empty(), "wrong verdicts:\n{}", wrong.join("\n"));
}

#[test]
fn small_kv_histories_without_partitioning() {
    for (file, linearizable) in [("kv/c01-ok.txt", true), ("kv/c01-bad.txt", false)] {
        let text = std::fs::read_to_string(data_dir().join(file)).unwrap();
        let model = KvMap;
        let history = parse(&model, &text, None).unwrap();
        let options = CheckOptions {
            partition: false,
            ..CheckOptions::default()
        };
        let verdict = history.check_with(&model, &options);
        assert_eq!(verdict.is_linearizable(), linearizable, "{file}: {verdict}");
        assert_eq!(verdict.is_violation(), !linearizable, "{file}");
    }
}

#[test]
fn etcd_explanations_fail_on_their_own() {
    // An explanation's operations, checked alone, are not linearizable.
    let dir = data_dir();
    for file in [
        "jepsen/etcd_000.log",
        "jepsen/etcd_001.log",
        "jepsen/etcd_003.log",
    ] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let model = Register::default();
        let history = parse(&model, &text, None).unwrap();
        let operations = history.operations();
        let verdict = history.check(&model);
        let explanation = verdict.explanation().expect("a violation");
        let subset: Vec<_> = explanation
            .operations
            .iter()
            .map(|op| operations[op.index].clone())
            .collect();
        assert!(
            subset.len() < operations.len() / 2,
            "{file}: {}",
            subset.len()
        );
        let again = dst_oracles::check_operations(&model, &subset, &CheckOptions::default());
        assert!(
            again.is_violation(),
            "{file}: the explanation is linearizable"
        );
    }
}
