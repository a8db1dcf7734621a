//! `cargo dst-fuzz ci`: continuous fuzzing as ClusterFuzzLite runs it on a
//! pull request (its code-change mode), over any executor:
//!
//! 1. Every stored finding is replayed: one that still fails the same way
//!    is *still failing* (it does not fail the job: it was known before
//!    the change), one that no longer does is *resolved*.
//! 2. Every corpus entry is replayed, so a regression fails fast: an entry
//!    that now fails in a way no stored finding does becomes a new finding
//!    (shrunk and written as the explorer writes them), and exploration is
//!    skipped.
//! 3. Otherwise the target is explored for `--time`.
//!
//! The exit status is [`exit::FINDING`] when there is a new finding, else
//! [`exit::OK`]. Besides the JSON summary (`--json`), the job writes SARIF
//! 2.1.0 (`--sarif FILE`: one result per failing finding, its rule the
//! property or crash kind, its location the failing assertion's or the
//! crash's innermost frame with a source line, its fingerprint the
//! signature's hash, so code scanning deduplicates across runs) and JUnit
//! XML (`--junit FILE`: one test case per property, and one per crash or
//! timeout finding). Both are written atomically.
//!
//! `--mode prune` minimizes the corpus instead (as `afl-cmin` does): its
//! entries, shortest first, are run once each, and an entry is kept only if
//! it adds coverage no shorter entry had (`Covered`: an edge or
//! decision-map slot at a hit-count class not seen yet, or a property's
//! first hit, example, counterexample or better guidance). The others are
//! deleted.
//!
//!
//! `--mode merge --from DIR [--from DIR...]` merges corpora written by
//! other runs or machines into the target's (libFuzzer's `-merge=1`): the
//! corpus's own entries are run first, then the others, shortest first,
//! and each that adds coverage is copied in (named by its hash, written
//! atomically); nothing is deleted.
//!
//! `--mode batch` runs every target, one code-change job each; the driver
//! runs it (`ci::batch`).

pub mod batch;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use dst::catalog::SiteInfo;
use dst_kernel::finding::{self, FindingFile, Found, Pipeline, Processed};
use dst_kernel::{Executor, Signature};
use serde_json::{Value, json};

use crate::explore::Options;
use crate::store::StoreError;
use crate::{exit, report, store};

/// What a CI job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Replay what is stored, then explore for --time; fail on new findings.
    CodeChange,
    /// Every target (of the fuzz crate, or each program after --cmd --)
    /// in code-change mode, sharing one time budget.
    Batch,
    /// Minimize the corpus: keep the entries that add coverage.
    Prune,
    /// Add to the corpus the entries of --from folders that add coverage.
    Merge,
}

/// `ci`'s own flags (the campaign's are `CampaignArgs`).
#[derive(Args, Debug, Clone)]
pub struct CiArgs {
    #[arg(long, value_enum, default_value = "code-change")]
    pub mode: Mode,
    /// Write SARIF 2.1.0 here.
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// Write JUnit XML here.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// With --mode merge: a corpus folder to merge (again for more).
    #[arg(long, value_name = "DIR")]
    pub from: Vec<PathBuf>,
}

impl CiArgs {
    /// The flags that parse back into `self`.
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mode = match self.mode {
            Mode::CodeChange => "code-change",
            Mode::Batch => "batch",
            Mode::Prune => "prune",
            Mode::Merge => "merge",
        };
        let mut args: Vec<std::ffi::OsString> = vec!["--mode".into(), mode.into()];
        for dir in &self.from {
            args.extend(["--from".into(), dir.into()]);
        }
        if let Some(sarif) = &self.sarif {
            args.extend(["--sarif".into(), sarif.into()]);
        }
        if let Some(junit) = &self.junit {
            args.extend(["--junit".into(), junit.into()]);
        }
        args
    }
}

/// A stored finding.
struct Stored {
    folder: String,
    signature: Option<Signature>,
    /// Its `finding.json` (empty where unreadable).
    record: FindingFile,
    input: Vec<u8>,
}

fn stored_findings(dir: &Path) -> Result<Vec<Stored>, StoreError> {
    let mut stored = Vec::new();
    for folder in store::known_findings(dir)? {
        let path = dir.join(&folder);
        let (Ok(text), Ok(input)) = (
            std::fs::read(path.join("finding.json")),
            std::fs::read(path.join("input")),
        ) else {
            continue; // not a finding folder (a temporary one, a stray file)
        };
        let record = FindingFile::parse(&text).unwrap_or_default();
        let signature = record.signature.clone();
        stored.push(Stored {
            folder,
            signature,
            record,
            input,
        });
    }
    Ok(stored)
}

/// What replaying the stored findings and corpus found: indices into the
/// stored findings, and the new findings written.
struct Replayed {
    still_failing: Vec<usize>,
    resolved: Vec<usize>,
    new: Vec<finding::FindingSummary>,
}

/// Steps 1 and 2 of a code-change job (see the module docs).
fn replay_stored(
    replayer: &mut dyn Executor,
    stored: &[Stored],
    corpus: &[Vec<u8>],
    options: &Options,
    started: Instant,
) -> Result<Replayed, StoreError> {
    let mut still_failing = Vec::new();
    let mut resolved = Vec::new();
    for (i, finding) in stored.iter().enumerate() {
        let now = replayer.run(&finding.input).signature();
        if now.is_some() && now == finding.signature {
            still_failing.push(i);
        } else {
            resolved.push(i);
        }
    }
    let known: Vec<Option<Signature>> = stored.iter().map(|f| f.signature.clone()).collect();
    let mut new = Vec::new();
    let mut folders = store::known_findings(&options.findings_dir)?;
    for input in corpus {
        let Some(signature) = replayer.run(input).signature() else {
            continue;
        };
        if known.contains(&Some(signature.clone()))
            || new
                .iter()
                .any(|f: &finding::FindingSummary| f.signature == signature)
        {
            continue;
        }
        let pipeline = Pipeline {
            dir: &options.findings_dir,
            shrink_budget: options.shrink_budget,
            timeout: options.timeout,
            reproduce: options.reproduce.as_ref(),
        };
        let found = Found {
            executions: 0,
            seconds: started.elapsed().as_secs_f64(),
        };
        match finding::process(
            replayer,
            input,
            Some(&signature),
            found,
            &mut folders,
            &pipeline,
        ) {
            Ok(Processed::New(summary)) => {
                eprintln!(
                    "dst-fuzz: regression: a corpus entry now fails: {} -> {}",
                    summary.signature,
                    summary.path.display()
                );
                new.push(summary);
            }
            Ok(_) => {}
            Err(e) => {
                return Err(StoreError::Unwritable {
                    path: options.findings_dir.clone(),
                    source: std::io::Error::other(e.to_string()),
                });
            }
        }
    }
    Ok(Replayed {
        still_failing,
        resolved,
        new,
    })
}

/// Runs a code-change job (see the module docs): `exec` replays what is
/// stored (in its isolated form when it has one, so a crash cannot end the
/// job); then `remake(exec)` gives what makes the executor of the
/// exploration, which runs in a forked client (`|exec| move || Ok(exec)`
/// for executors that survive a fork; a VM must be made anew there).
pub fn code_change<E, F, M>(
    mut exec: E,
    remake: impl FnOnce(E) -> M,
    catalog: &[SiteInfo],
    options: &Options,
    ci: &CiArgs,
    json_out: bool,
) -> Result<i32, StoreError>
where
    E: Executor,
    F: Executor + 'static,
    M: FnOnce() -> Result<F, StoreError>,
{
    match ci.mode {
        Mode::CodeChange => {}
        Mode::Prune => return prune(exec, catalog, options, json_out),
        Mode::Merge => return merge(exec, catalog, options, &ci.from, json_out),
        Mode::Batch => {
            // The driver runs a batch (`batch`), one code-change
            // job per target.
            eprintln!(
                "dst-fuzz: ci --mode batch takes the fuzz crate's targets or --cmd programs, not one target"
            );
            return Ok(exit::USAGE);
        }
    }
    let started = Instant::now();
    let stored = stored_findings(&options.findings_dir)?;
    let corpus = store::load_corpus(&options.corpus_dir)?;
    let replayed = if let Some(mut isolated) = exec.isolated(options.timeout) {
        replay_stored(&mut *isolated, &stored, &corpus, options, started)
    } else {
        replay_stored(&mut exec, &stored, &corpus, options, started)
    }?;
    let Replayed {
        still_failing,
        resolved,
        mut new,
    } = replayed;
    let (still_failing, resolved): (Vec<&Stored>, Vec<&Stored>) = (
        still_failing.iter().map(|&i| &stored[i]).collect(),
        resolved.iter().map(|&i| &stored[i]).collect(),
    );
    let make = remake(exec);
    let (campaign, executions) = if new.is_empty() {
        let summary = crate::explore::explore(make, catalog, options)?;
        new.extend(summary.findings.iter().cloned());
        (summary.campaign, summary.executions)
    } else {
        // Fail fast: the regression is the news.
        (
            crate::explore::saved_campaign(&options.campaign_file, catalog)?,
            0,
        )
    };
    let failing: Vec<FindingFile> = new
        .iter()
        .filter_map(|f| FindingFile::read(&f.path))
        .chain(still_failing.iter().map(|f| f.record.clone()))
        .collect();
    if let Some(path) = &ci.sarif {
        write(path, &sarif(&failing))?;
    }
    if let Some(path) = &ci.junit {
        let properties = report::json(&campaign);
        write(path, &junit(&options.name, &properties, &failing))?;
    }
    let folder_names =
        |list: &[&Stored]| -> Vec<String> { list.iter().map(|f| f.folder.clone()).collect() };
    eprintln!(
        "dst-fuzz: ci {}: {} new finding(s), {} still failing, {} resolved, {} corpus entries replayed, {executions} executions",
        options.name,
        new.len(),
        still_failing.len(),
        resolved.len(),
        corpus.len()
    );
    if json_out {
        println!(
            "{}",
            json!({
                "mode": "code-change",
                "target": options.name,
                "new": new,
                "still_failing": folder_names(&still_failing),
                "resolved": folder_names(&resolved),
                "corpus_replayed": corpus.len(),
                "executions": executions,
                "properties": report::json(&campaign),
            })
        );
    }
    Ok(if new.is_empty() {
        exit::OK
    } else {
        exit::FINDING
    })
}

/// AFL's hit-count classes: 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+.
fn class(count: u8) -> u8 {
    match count {
        0 => 0,
        1..=3 => count,
        4..=7 => 4,
        8..=15 => 5,
        16..=31 => 6,
        32..=127 => 7,
        _ => 8,
    }
}

/// What the inputs run so far covered, as `prune` and `merge` judge an
/// input: it adds coverage if it reaches an edge or decision-map slot at a
/// hit-count class not seen yet, or a property's first hit, example,
/// counterexample or better guidance.
struct Covered {
    campaign: dst_kernel::Campaign,
    seen: std::collections::HashSet<(usize, usize, u8)>,
}

impl Covered {
    fn new(catalog: &[SiteInfo]) -> Covered {
        Covered {
            campaign: dst_kernel::Campaign::new(catalog.to_vec()),
            seen: std::collections::HashSet::new(),
        }
    }

    /// Runs `input`; whether it added coverage.
    fn adds(&mut self, exec: &mut dyn Executor, input: &[u8]) -> bool {
        let record = exec.run(input);
        let novelty = self.campaign.observe(input, &record);
        let mut adds = novelty.new_edges > 0
            || !novelty.first_hit.is_empty()
            || !novelty.first_example.is_empty()
            || !novelty.first_counterexample.is_empty()
            || !novelty.better_guidance.is_empty();
        let coverage = exec.coverage();
        let maps = [coverage.edges.to_vec(), coverage.decisions.to_vec()];
        for (m, map) in maps.iter().enumerate() {
            for (i, &count) in map.iter().enumerate() {
                if count != 0 && self.seen.insert((m, i, class(count))) {
                    adds = true;
                }
            }
        }
        adds
    }
}

/// The files of a corpus folder with their bytes (a missing folder: none),
/// shortest first.
fn entries(dir: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>, StoreError> {
    let unreadable = |source| StoreError::Unreadable {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    match std::fs::read_dir(dir) {
        Ok(read) => {
            for entry in read {
                let path = entry.map_err(unreadable)?.path();
                let hidden = path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'));
                if path.is_file() && !hidden {
                    let bytes = store::read_input(&path)?;
                    entries.push((path, bytes));
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(unreadable(e)),
    }
    entries.sort_by(|a, b| a.1.len().cmp(&b.1.len()).then_with(|| a.1.cmp(&b.1)));
    Ok(entries)
}

/// `--mode prune` (see the module docs).
fn prune<E: Executor>(
    mut exec: E,
    catalog: &[SiteInfo],
    options: &Options,
    json_out: bool,
) -> Result<i32, StoreError> {
    let mut covered = Covered::new(catalog);
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    for (path, input) in entries(&options.corpus_dir)? {
        if covered.adds(&mut exec, &input) {
            kept.push(path);
        } else {
            dropped.push(path);
        }
    }
    // Every decision is made before anything is deleted.
    for path in &dropped {
        std::fs::remove_file(path).map_err(|source| StoreError::Unwritable {
            path: path.clone(),
            source,
        })?;
    }
    eprintln!(
        "dst-fuzz: ci {}: pruned the corpus to {} of {} entries",
        options.name,
        kept.len(),
        kept.len() + dropped.len()
    );
    if json_out {
        println!(
            "{}",
            json!({
                "mode": "prune",
                "target": options.name,
                "kept": kept.len(),
                "dropped": dropped.len(),
            })
        );
    }
    Ok(exit::OK)
}

/// `--mode merge` (see the module docs).
fn merge<E: Executor>(
    mut exec: E,
    catalog: &[SiteInfo],
    options: &Options,
    from: &[PathBuf],
    json_out: bool,
) -> Result<i32, StoreError> {
    if from.is_empty() {
        return Err(StoreError::BadInput {
            path: options.corpus_dir.clone(),
            why: "ci --mode merge needs the folders to merge: --from DIR".into(),
        });
    }
    let mut incoming = Vec::new();
    for dir in from {
        if !dir.is_dir() {
            return Err(StoreError::BadInput {
                path: dir.clone(),
                why: "not a corpus folder".into(),
            });
        }
        incoming.extend(entries(dir)?);
    }
    incoming.sort_by(|a, b| a.1.len().cmp(&b.1.len()).then_with(|| a.1.cmp(&b.1)));
    incoming.dedup_by(|a, b| a.1 == b.1);
    store::ensure_dir(&options.corpus_dir)?;
    // An input that crashes must not end the job: run them isolated.
    let (added, before) = if let Some(mut isolated) = exec.isolated(options.timeout) {
        merge_into(&mut *isolated, catalog, &options.corpus_dir, &incoming)
    } else {
        merge_into(&mut exec, catalog, &options.corpus_dir, &incoming)
    }?;
    eprintln!(
        "dst-fuzz: ci {}: merged {added} of {} entries from {} folder(s) into {} ({} entries before)",
        options.name,
        incoming.len(),
        from.len(),
        options.corpus_dir.display(),
        before
    );
    if json_out {
        println!(
            "{}",
            json!({
                "mode": "merge",
                "target": options.name,
                "added": added,
                "considered": incoming.len(),
                "before": before,
            })
        );
    }
    Ok(exit::OK)
}

/// Runs `corpus`'s entries, then copies in each of `incoming` that adds
/// coverage; returns how many it copied, and how many `corpus` had.
fn merge_into(
    runner: &mut dyn Executor,
    catalog: &[SiteInfo],
    corpus: &Path,
    incoming: &[(PathBuf, Vec<u8>)],
) -> Result<(usize, usize), StoreError> {
    let mut covered = Covered::new(catalog);
    let existing = entries(corpus)?;
    for (_, input) in &existing {
        covered.adds(runner, input);
    }
    let mut added = 0;
    for (_, input) in incoming {
        if existing.iter().any(|(_, e)| e == input) || !covered.adds(runner, input) {
            continue;
        }
        let path = corpus.join(store::corpus_name(input));
        store::write(&path, input)?;
        added += 1;
    }
    Ok((added, existing.len()))
}

fn write(path: &Path, text: &str) -> Result<(), StoreError> {
    dst_kernel::write_atomic(path, text.as_bytes()).map_err(|source| StoreError::Unwritable {
        path: path.to_path_buf(),
        source,
    })
}

/// `file` and `line` of a finding's location: an assertion's
/// `FILE:LINE:COLUMN`, or a crash's place (`function (FILE:LINE)`, with
/// `, stack HASH` after it at the process level; `function at FILE:LINE`
/// in findings written before places were one text).
fn file_and_line(location: &str) -> Option<(String, u64)> {
    let place = location.split(", stack ").next()?;
    let place = match place.strip_suffix(')').and_then(|p| p.rsplit_once(" (")) {
        Some((_, inside)) => inside,
        None => place.rsplit(" at ").next()?,
    };
    let mut parts: Vec<&str> = place.rsplitn(3, ':').collect();
    parts.reverse();
    match parts.as_slice() {
        [file, line, column] if column.parse::<u64>().is_ok() => {
            Some((file.to_string(), line.parse().ok()?))
        }
        [file, line] | [_, file, line] => Some((file.to_string(), line.parse().ok()?)),
        _ => None,
    }
}

/// A finding's rule: its property, or its crash's cause, or "timeout".
fn rule(record: &FindingFile) -> String {
    match &record.signature {
        Some(Signature::Property { message }) => message.clone(),
        Some(Signature::Crash { cause, .. }) => cause.clone(),
        Some(Signature::Timeout) => "timeout".to_string(),
        None => "finding".to_string(),
    }
}

/// SARIF 2.1.0 for `failing` findings (their finding.json records).
pub fn sarif(failing: &[FindingFile]) -> String {
    let mut rules: Vec<String> = failing.iter().map(rule).collect();
    rules.sort();
    rules.dedup();
    let results: Vec<Value> = failing
        .iter()
        .map(|record| {
            // The signature as a JSON value's text (keys sorted), as
            // fingerprints have always been made.
            let signature = serde_json::to_value(&record.signature)
                .map(|v| v.to_string())
                .unwrap_or_default();
            let fingerprint = format!("{:016x}", dst::hash::fnv64(signature.as_bytes()));
            let mut result = json!({
                "ruleId": rule(record),
                "level": "error",
                "message": {"text": record.message.as_deref().unwrap_or("a dst finding")},
                "partialFingerprints": {"dstSignature/v1": fingerprint},
            });
            if let Some((file, line)) = record.location.as_deref().and_then(file_and_line) {
                result["locations"] = json!([{
                    "physicalLocation": {
                        "artifactLocation": {"uri": file},
                        "region": {"startLine": line.max(1)},
                    }
                }]);
            }
            result
        })
        .collect();
    let out = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "dst",
                "informationUri": "https://github.com/dst",
                "rules": rules.iter().map(|r| json!({"id": r, "shortDescription": {"text": r}})).collect::<Vec<_>>(),
            }},
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&out).unwrap_or_default()
}

/// `text` escaped for XML, without the characters XML 1.0 forbids (a
/// finding's message may hold any byte of the target's output).
fn xml(text: &str) -> String {
    let allowed = |c: &char| !matches!(c, '\0'..='\x08' | '\x0b' | '\x0c' | '\x0e'..='\x1f' | '\u{fffe}' | '\u{ffff}');
    text.chars()
        .filter(allowed)
        .collect::<String>()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JUnit XML: a test case per property (`properties`: `report::json`),
/// failing when it fails, skipped when it was never reached; and one per
/// crash or timeout finding in `failing`.
pub fn junit(name: &str, properties: &Value, failing: &[FindingFile]) -> String {
    let mut cases = Vec::new();
    let mut failures = 0;
    let mut skipped = 0;
    for property in properties.as_array().into_iter().flatten() {
        let message = property["message"].as_str().unwrap_or("?");
        let kind = property["kind"].as_str().unwrap_or("property");
        let body = match property["status"].as_str() {
            Some("failing") => {
                failures += 1;
                format!(
                    "<failure message=\"{}\">counterexample {}</failure>",
                    xml(message),
                    xml(property["first_counterexample"].as_str().unwrap_or("?"))
                )
            }
            Some("unfound") => {
                skipped += 1;
                "<skipped message=\"never reached\"/>".to_string()
            }
            _ => String::new(),
        };
        cases.push(format!(
            "    <testcase classname=\"{}\" name=\"{}\">{body}</testcase>",
            xml(kind),
            xml(message)
        ));
    }
    // A failing property is its test case above; the other findings
    // (crashes, timeouts) are cases of their own.
    for record in failing
        .iter()
        .filter(|r| !matches!(r.signature, Some(Signature::Property { .. })))
    {
        failures += 1;
        let text = record.message.as_deref().unwrap_or("a finding");
        cases.push(format!(
            "    <testcase classname=\"{}\" name=\"{}\"><failure message=\"{}\"/></testcase>",
            xml(record.kind.as_deref().unwrap_or("crash")),
            xml(&rule(record)),
            xml(text)
        ));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"dst: {}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">\n{}\n  </testsuite>\n</testsuites>\n",
        xml(name),
        cases.len(),
        cases.join("\n")
    )
}

/// The default time budget of a CI job.
pub const DEFAULT_TIME: Duration = Duration::from_secs(60);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_read_from_both_shapes() {
        assert_eq!(
            file_and_line("parse (/src/parser.c:24), stack 1a2b3c4d"),
            Some(("/src/parser.c".to_string(), 24))
        );
        assert_eq!(
            file_and_line("parse (/src/parser.c:24)"),
            Some(("/src/parser.c".to_string(), 24))
        );
        assert_eq!(
            file_and_line("parse at /src/parser.c:24"),
            Some(("/src/parser.c".into(), 24))
        );
        assert_eq!(
            file_and_line("examples/bank/src/lib.rs:40:9"),
            Some(("examples/bank/src/lib.rs".into(), 40))
        );
        assert_eq!(file_and_line("pc 0x1234"), None);
    }

    #[test]
    fn junit_escapes_and_counts() {
        let properties = json!([
            {"message": "a < b", "kind": "always", "status": "failing", "first_counterexample": "ab"},
            {"message": "seen", "kind": "sometimes", "status": "unfound"},
            {"message": "ok", "kind": "always", "status": "passing"},
        ]);
        let crash = FindingFile {
            kind: Some("crash".into()),
            message: Some("boom & bust".into()),
            signature: Some(Signature::Crash {
                cause: "SIGSEGV".into(),
                at: "f".into(),
            }),
            ..FindingFile::default()
        };
        // The failing property's finding is its case above, not a second.
        let property = FindingFile {
            kind: Some("assertion_failure".into()),
            message: Some("a < b".into()),
            signature: Some(Signature::Property {
                message: "a < b".into(),
            }),
            ..FindingFile::default()
        };
        let text = junit("t", &properties, &[crash, property]);
        assert!(
            text.contains("tests=\"4\" failures=\"2\" skipped=\"1\""),
            "{text}"
        );
        assert!(text.contains("name=\"a &lt; b\""), "{text}");
        assert!(text.contains("boom &amp; bust"), "{text}");
    }

    #[test]
    fn junit_drops_characters_xml_forbids() {
        // Found by dst's own finding_file target: a message with a control
        // character made the document unreadable to XML parsers.
        let crash = FindingFile {
            kind: Some("crash".into()),
            message: Some("bad\u{1}byte\u{b}".into()),
            ..FindingFile::default()
        };
        let text = junit("t\u{0}", &json!([]), &[crash]);
        assert!(text.contains("badbyte"), "{text}");
        assert!(!text.chars().any(|c| c < ' ' && c != '\n'), "{text:?}");
    }
}
