//! `ci --mode batch`, as ClusterFuzzLite's batch mode: every target of the
//! fuzz crate (`ci --mode batch`), or every program after `--cmd --` (each
//! run without arguments, as an OSS-Fuzz `out/` folder holds them:
//! `ci --mode batch --cmd -- out/*`), one after another, each as a
//! code-change job ([`crate::ci`]) in its own process, sharing one time
//! budget: each gets an equal share of what is left, so time a target does
//! not use (a regression stops it early) goes to the ones after it.
//!
//! The job's exit status is the first target's error status if one failed
//! to run (bad input, a build failure), else 1 if any target has a new
//! finding, else 0. `--json` prints one summary with each target's;
//! `--sarif` and `--junit` write one file over all targets (SARIF: one run,
//! every target's results; JUnit: a test suite per target).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::args::CampaignArgs;
use crate::ci::{CiArgs, Mode};
use crate::exit;
use crate::exit::Failure;

/// One target of a batch: its name, and the flags that name it to `ci`.
pub struct Target {
    pub name: String,
    pub flags: Vec<OsString>,
}

impl Target {
    /// A target of the fuzz crate.
    pub fn of_crate(name: &str) -> Target {
        Target {
            name: name.to_string(),
            flags: vec![name.into()],
        }
    }

    /// A program run by its fork server, without arguments.
    pub fn program(program: &Path, defer: bool) -> Target {
        let name = program
            .file_stem()
            .map_or_else(|| "cmd".into(), |s| s.to_string_lossy().into_owned());
        let mut flags: Vec<OsString> = vec![name.clone().into(), "--cmd".into()];
        if defer {
            flags.push("--defer".into());
        }
        flags.extend(["--".into(), program.as_os_str().to_owned()]);
        Target { name, flags }
    }
}

/// Runs `targets` (see the module docs); `fuzz_dir` is the fuzz crate's
/// folder, where every target keeps its corpus and findings.
pub fn run(
    fuzz_dir: &Path,
    targets: &[Target],
    args: &CampaignArgs,
    ci: &CiArgs,
) -> Result<i32, Failure> {
    if targets.is_empty() {
        return Err(Failure::new(exit::USAGE, "ci --mode batch: no targets"));
    }
    let me = std::env::current_exe().map_err(|e| {
        Failure::new(
            exit::INTERNAL,
            format!("cannot find cargo-dst-fuzz itself: {e}"),
        )
    })?;
    let work = std::env::temp_dir().join(format!("dst-batch-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| {
        Failure::new(
            exit::UNWRITABLE,
            format!("cannot make {}: {e}", work.display()),
        )
    })?;
    let result = run_in(&work, &me, fuzz_dir, targets, args, ci);
    let _ = std::fs::remove_dir_all(&work);
    result
}

fn run_in(
    work: &Path,
    me: &Path,
    fuzz_dir: &Path,
    targets: &[Target],
    args: &CampaignArgs,
    ci: &CiArgs,
) -> Result<i32, Failure> {
    let budget = args.time.unwrap_or(crate::ci::DEFAULT_TIME);
    let started = Instant::now();
    let mut summaries = Vec::new();
    let mut sarifs = Vec::new();
    let mut junits = Vec::new();
    let mut status = exit::OK;
    for (i, target) in targets.iter().enumerate() {
        let left = budget.saturating_sub(started.elapsed());
        let share = left / (targets.len() - i) as u32;
        let mut campaign = args.clone();
        campaign.json = true;
        if args.runs.is_none() {
            campaign.time = Some(share.max(Duration::from_secs(1)));
        }
        let sarif = work.join(format!("{i}.sarif"));
        let junit = work.join(format!("{i}.xml"));
        let child_ci = CiArgs {
            mode: Mode::CodeChange,
            sarif: Some(sarif.clone()),
            junit: Some(junit.clone()),
            from: Vec::new(),
        };
        let mut command = Command::new(me);
        command
            .arg("dst-fuzz")
            .arg("--fuzz-dir")
            .arg(fuzz_dir)
            .arg("ci")
            .args(campaign.to_args())
            .args(child_ci.to_args());
        command.args(&target.flags);
        let budget = match (campaign.runs, campaign.time) {
            (Some(runs), _) => format!("{runs} runs"),
            (None, time) => format!("{:.0} s", time.unwrap_or_default().as_secs_f64()),
        };
        eprintln!(
            "dst-fuzz: ci batch: {} ({} of {}, {budget})",
            target.name,
            i + 1,
            targets.len(),
        );
        let output = command
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| {
                Failure::new(exit::INTERNAL, format!("cannot run {}: {e}", me.display()))
            })?;
        let code = output.status.code().unwrap_or(exit::INTERNAL);
        let summary: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        match code {
            exit::OK => {}
            exit::FINDING => {
                if status == exit::OK {
                    status = exit::FINDING;
                }
            }
            error => {
                if status == exit::OK || status == exit::FINDING {
                    status = error;
                }
            }
        }
        summaries.push(json!({"target": target.name, "status": code, "summary": summary}));
        if let Ok(text) = std::fs::read_to_string(&sarif) {
            sarifs.push(text);
        }
        if let Ok(text) = std::fs::read_to_string(&junit) {
            junits.push(text);
        }
    }
    if let Some(path) = &ci.sarif {
        write(path, &merge_sarif(&sarifs))?;
    }
    if let Some(path) = &ci.junit {
        write(path, &merge_junit(&junits))?;
    }
    let new: usize = summaries
        .iter()
        .map(|s| s["summary"]["new"].as_array().map_or(0, Vec::len))
        .sum();
    eprintln!(
        "dst-fuzz: ci batch: {} targets, {new} new finding(s), {:.1} s",
        targets.len(),
        started.elapsed().as_secs_f64()
    );
    if args.json {
        println!(
            "{}",
            json!({"mode": "batch", "new": new, "status": status, "targets": summaries})
        );
    }
    Ok(status)
}

fn write(path: &Path, text: &str) -> Result<(), Failure> {
    dst_kernel::write_atomic(path, text.as_bytes()).map_err(|e| {
        Failure::new(
            exit::UNWRITABLE,
            format!("cannot write {}: {e}", path.display()),
        )
    })
}

/// One SARIF log over several: the first's run, with every log's rules
/// (once each) and results.
pub fn merge_sarif(logs: &[String]) -> String {
    let parsed: Vec<Value> = logs
        .iter()
        .filter_map(|t| serde_json::from_str(t).ok())
        .collect();
    let Some(mut out) = parsed
        .first()
        .cloned()
        .or_else(|| serde_json::from_str(&crate::ci::sarif(&[])).ok())
    else {
        return String::new();
    };
    let mut rules: Vec<Value> = Vec::new();
    let mut results: Vec<Value> = Vec::new();
    for log in &parsed {
        let run = &log["runs"][0];
        for rule in run["tool"]["driver"]["rules"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if !rules.iter().any(|r| r["id"] == rule["id"]) {
                rules.push(rule.clone());
            }
        }
        results.extend(run["results"].as_array().into_iter().flatten().cloned());
    }
    out["runs"][0]["tool"]["driver"]["rules"] = Value::Array(rules);
    out["runs"][0]["results"] = Value::Array(results);
    serde_json::to_string_pretty(&out).unwrap_or_default()
}

/// One JUnit document over several: every `<testsuite>` of each.
pub fn merge_junit(documents: &[String]) -> String {
    let mut suites = Vec::new();
    for document in documents {
        let mut rest = document.as_str();
        while let Some(start) = rest.find("<testsuite ") {
            let Some(end) = rest[start..].find("</testsuite>") else {
                break;
            };
            let end = start + end + "</testsuite>".len();
            suites.push(format!("  {}", &rest[start..end]));
            rest = &rest[end..];
        }
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n{}\n</testsuites>\n",
        suites.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sarif_logs_merge_into_one_run_with_rules_once() {
        let one = json!({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "dst", "rules": [{"id": "a"}]}}, "results": [{"ruleId": "a"}]}]});
        let two = json!({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "dst", "rules": [{"id": "a"}, {"id": "b"}]}}, "results": [{"ruleId": "a"}, {"ruleId": "b"}]}]});
        let merged: Value =
            serde_json::from_str(&merge_sarif(&[one.to_string(), two.to_string()])).unwrap();
        let run = &merged["runs"][0];
        assert_eq!(run["tool"]["driver"]["rules"].as_array().unwrap().len(), 2);
        assert_eq!(run["results"].as_array().unwrap().len(), 3);
        let empty: Value = serde_json::from_str(&merge_sarif(&[])).unwrap();
        assert_eq!(empty["runs"][0]["results"], json!([]));
    }

    #[test]
    fn junit_documents_merge_their_suites() {
        let doc = |n: &str| {
            format!(
                "<?xml version=\"1.0\"?>\n<testsuites>\n  <testsuite name=\"{n}\" tests=\"1\">\n    <testcase name=\"x\"/>\n  </testsuite>\n</testsuites>\n"
            )
        };
        let merged = merge_junit(&[doc("a"), doc("b")]);
        assert_eq!(merged.matches("<testsuite ").count(), 2, "{merged}");
        assert_eq!(merged.matches("<testsuites>").count(), 1, "{merged}");
        assert!(merged.contains("name=\"b\""));
    }
}
