//! The finding pipeline, the same at every level: a failing input is
//! replayed several times (a flaky one is marked so, with its first
//! divergent decision), shrunk, prefix-bisected, explained, and written to
//! `findings/NAME/<signature>/` ([`process`]). It drives any [`Executor`];
//! failures that hang or kill the process are replayed through the
//! executor's [`Executor::isolated`] form.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dst::catalog::SiteInfo;
use dst::region::{Event, FLAG_TRACE_SITES, RegionRef};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{
    Coverage, Determinism, End, Executor, Outcome, RunRecord, Signature, bisect_prefix, confirm,
    shrink, write_atomic,
};

/// A finding folder or file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write to {path}: {source}")]
pub struct Unwritable {
    pub path: PathBuf,
    pub source: std::io::Error,
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), Unwritable> {
    write_atomic(path, bytes).map_err(|source| Unwritable {
        path: path.to_path_buf(),
        source,
    })
}

/// Replays before a finding is reported.
pub const REPLAYS: u32 = 5;

/// When a finding was found.
#[derive(Debug, Clone, Copy)]
pub struct Found {
    pub executions: u64,
    pub seconds: f64,
}

/// The version of `finding.json` that [`process`] writes
/// ([`FindingFile::version`]; files written before there was one read as
/// 0). 2: a crash's place is one text at every level, `function
/// (file:line)` ([`FindingFile::parse`] reads older places so).
pub const FINDING_VERSION: u32 = 2;

/// `finding.json`, the record of a finding folder: written by [`process`]
/// and read by everything else through this type. Every field a file lacks
/// (an older version, an edit by hand) reads as its default, so each
/// reader decides what it needs; a field of the wrong type makes the whole
/// file unreadable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FindingFile {
    pub version: u32,
    /// "assertion_failure", "crash" or "timeout".
    pub kind: Option<String>,
    /// The failing assertion's kind (`always`, ...).
    pub property: Option<String>,
    /// The failing property's message, or the crash's cause and message.
    pub message: Option<String>,
    /// The failing assertion's condition text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// The failing evaluation's details (JSON the target wrote).
    pub details: Option<Value>,
    pub location: Option<String>,
    pub signature: Option<Signature>,
    /// Replays did not all fail alike: not shrunk.
    pub flaky: Option<bool>,
    pub determinism: Option<Determinism>,
    pub reproduced: Option<Reproduced>,
    pub found_at: Option<FoundAt>,
    pub input: Option<InputLengths>,
    pub shrink_runs: Option<u64>,
    pub decision_count: Option<u64>,
    /// The faults that fired in the shrunk run, in order.
    pub faults_fired: Vec<String>,
    /// The shrunk run's decisions, explained.
    pub decisions: Vec<DecisionLine>,
    /// The shrunk run's thread schedule, explained (controlled threads).
    pub schedule: Vec<StepLine>,
    /// Commands that reproduce it (`explain`: a replay; `debugger`: the
    /// target under gdb).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<std::collections::BTreeMap<String, String>>,
}

/// How often the finding's confirmation replays failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Reproduced {
    pub replays: u32,
    pub failed: u32,
}

/// When a finding was found ([`Found`], as written).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FoundAt {
    pub executions: u64,
    pub seconds: f64,
}

/// The lengths of a finding's inputs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct InputLengths {
    pub original_len: usize,
    pub shrunk_len: usize,
    pub prefix_len: Option<usize>,
}

impl FindingFile {
    /// The `finding.json` of the finding folder at `path`; `None` when it
    /// is missing or not a finding record.
    pub fn read(path: &Path) -> Option<FindingFile> {
        FindingFile::parse(&std::fs::read(path.join("finding.json")).ok()?)
    }

    /// A `finding.json`'s bytes, if they are a finding record (a JSON
    /// object).
    ///
    /// A crash signature of a file before version 2 is read as it is
    /// written now ([`current_place`]), so a stored finding of the
    /// emulator, wasm or KVM level still matches its replay.
    pub fn parse(bytes: &[u8]) -> Option<FindingFile> {
        let value: Value = serde_json::from_slice(bytes).ok()?;
        if !value.is_object() {
            return None;
        }
        let mut file: FindingFile = serde_json::from_value(value).ok()?;
        if file.version < 2
            && let Some(Signature::Crash { at, .. }) = &mut file.signature
            && let Some(place) = current_place(at)
        {
            *at = place;
        }
        Some(file)
    }

    /// The record's description fields (kind, property, message,
    /// condition, details, location) from [`describe`]'s value.
    fn described(description: &Value) -> FindingFile {
        let text = |key: &str| description[key].as_str().map(str::to_string);
        FindingFile {
            kind: text("kind"),
            property: text("property"),
            message: text("message"),
            condition: text("condition"),
            details: Some(description["details"].clone()).filter(|d| !d.is_null()),
            location: text("location"),
            ..FindingFile::default()
        }
    }
}

/// A reported finding, for summaries.
#[derive(Debug, Clone, Serialize)]
pub struct FindingSummary {
    pub signature: Signature,
    pub path: PathBuf,
    pub executions: u64,
    pub seconds: f64,
    pub input_len: usize,
    pub shrunk_len: usize,
    pub flaky: bool,
}

/// A folder name for a signature: readable, and unique by a hash.
pub fn slug(signature: &Signature) -> String {
    let text = match signature {
        Signature::Property { message } => format!("property-{message}"),
        Signature::Crash { cause, at } => format!("{cause}-{at}"),
        Signature::Timeout => "timeout".to_string(),
    };
    let mut name: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    name.truncate(60);
    let key = serde_json::to_vec(signature).unwrap_or_default();
    format!(
        "{}-{:08x}",
        name.trim_matches('-'),
        dst::hash::fnv64(&key) as u32
    )
}

/// One decision of a run, explained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionLine {
    pub index: u64,
    pub kind: String,
    pub value: u64,
    pub offset: u64,
    pub width: u16,
    pub location: Option<String>,
    /// The fault's name, for `fault!` decisions.
    pub fault: Option<String>,
}

impl std::fmt::Display for DecisionLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self.location.as_deref().unwrap_or("?");
        match &self.fault {
            Some(name) if self.value != 0 => {
                write!(f, "#{:<4} fault  \"{name}\" FIRED at {at}", self.index)
            }
            Some(name) => write!(f, "#{:<4} fault  \"{name}\" not fired at {at}", self.index),
            None => write!(
                f,
                "#{:<4} {:<6} = {} at {at}",
                self.index, self.kind, self.value
            ),
        }
    }
}

/// One step of a controlled thread schedule, explained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepLine {
    pub step: u64,
    pub thread: u32,
    pub op: String,
    pub at: String,
    /// The thread this step preempted (it could have gone on), if any.
    pub preempts: Option<u32>,
}

impl std::fmt::Display for StepLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "step {:<5} thread {:<3} {:<17} at {}",
            self.step, self.thread, self.op, self.at
        )?;
        if let Some(other) = self.preempts {
            write!(f, "   <- preempts thread {other}")?;
        }
        Ok(())
    }
}

/// The thread schedule of a run recorded with `FLAG_TRACE_SITES` (empty
/// when it ran no controlled threads): which thread ran each step, the
/// operation it was about to do, and where.
pub fn schedule(record: &RunRecord) -> Vec<StepLine> {
    record
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Step(s) => Some(StepLine {
                step: s.step,
                thread: s.thread,
                op: s.op.clone(),
                at: match (s.line, s.column) {
                    (0, _) => s.file.clone(),
                    (line, 0) => format!("{}:{line}", s.file),
                    (line, column) => format!("{}:{line}:{column}", s.file),
                },
                preempts: s.preempted,
            }),
            _ => None,
        })
        .collect()
}

/// The decisions of a run recorded with `FLAG_TRACE_SITES`, with locations.
pub fn explain(record: &RunRecord) -> Vec<DecisionLine> {
    let mut sites = std::collections::BTreeMap::new();
    for event in &record.events {
        if let Event::DecisionSite {
            index,
            file,
            line,
            column,
            name,
        } = event
        {
            sites.insert(*index, (format!("{file}:{line}:{column}"), name.clone()));
        }
    }
    record
        .decisions
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let (location, fault) = sites
                .get(&(i as u64))
                .cloned()
                .map_or((None, None), |(l, n)| (Some(l), n));
            DecisionLine {
                index: i as u64,
                kind: dst::decision::Kind::from_u8(d.kind)
                    .map_or("?", |k| k.name())
                    .to_string(),
                value: d.value,
                offset: d.offset,
                width: d.width,
                location,
                fault,
            }
        })
        .collect()
}

/// Runs `input` with decision sites traced.
pub fn traced_run(runner: &mut (impl Executor + ?Sized), input: &[u8]) -> RunRecord {
    runner.set_flags(FLAG_TRACE_SITES);
    let record = runner.run(input);
    runner.set_flags(0);
    record
}

/// The finding's description: kind, property, message, details, location.
pub fn describe(record: &RunRecord, catalog: &[SiteInfo]) -> Value {
    match &record.outcome {
        Outcome::AssertionFailure { site, message } => {
            let info = catalog.get(*site as usize);
            // The failing evaluation: false for an always, true (reached)
            // for an unreachable.
            let details = record.events.iter().find_map(|e| match e {
                Event::Assertion {
                    site: s,
                    condition,
                    details,
                } if s == site && info.is_none_or(|i| i.kind.fails_on(*condition)) => details
                    .as_deref()
                    .and_then(|d| serde_json::from_str::<Value>(d).ok()),
                _ => None,
            });
            json!({
                "kind": "assertion_failure",
                "property": info.map(|i| i.kind.name()),
                "message": message,
                "condition": info.map(|i| i.condition.clone()),
                "details": details,
                "location": info.map(|i| i.location.to_string()),
            })
        }
        Outcome::Crash {
            cause,
            message,
            location,
        } => json!({
            "kind": "crash",
            "property": Value::Null,
            "message": format!("{cause}: {message}"),
            "details": Value::Null,
            "location": location,
        }),
        Outcome::Timeout => json!({
            "kind": "timeout",
            "property": Value::Null,
            "message": "the run exceeded its time limit",
            "details": Value::Null,
            "location": Value::Null,
        }),
        Outcome::Pass => json!({ "kind": "pass" }),
    }
}

/// Whether a failure with this signature can only be replayed in isolation
/// (a child process per run): it hangs, or kills the process.
pub fn needs_isolation(signature: &Signature) -> bool {
    match signature {
        Signature::Timeout => true,
        Signature::Crash { cause, .. } => cause != "panic",
        Signature::Property { .. } => false,
    }
}

/// Shrinking budget for findings whose every candidate may cost a timeout
/// or a fork.
pub const SLOW_SHRINK_BUDGET: u64 = 100;

/// The crash of a run that killed the explorer's own process (a target in
/// this process): the explorer saw it die, but not of what.
pub fn process_death() -> Outcome {
    Outcome::Crash {
        cause: "signal".to_string(),
        message: "the target was killed by a signal".to_string(),
        location: None,
    }
}

/// Whether `signature` is that of [`process_death`]: it names no failure
/// a replay could confirm (the replay in a child process names the signal).
pub fn is_process_death(signature: &Signature) -> bool {
    process_death().signature().as_ref() == Some(signature)
}

/// What became of a failing input.
#[derive(Debug)]
pub enum Processed {
    /// A new finding, written.
    New(FindingSummary),
    /// Its signature has a finding already (this campaign's, or another
    /// client's).
    Known,
    /// No replay failed the way the explorer saw: not a finding (yet). The
    /// caller says so and forgets the signature, so the next input that
    /// fails that way gets its own chance.
    Unconfirmed,
}

/// A replayer for confirming a failure: a replay that times out although
/// the failure being confirmed is not a timeout (a busy machine, not the
/// target) is run once more with a generous limit, so that load cannot
/// turn a crash or a failed assertion into a timeout.
struct Patient<'a, E: Executor + ?Sized> {
    runner: &'a mut E,
    expected: Option<&'a Signature>,
}

/// The limit of a patient replay: ten times the run's, at least 10 s.
fn patient_limit(timeout: Duration) -> Duration {
    (timeout * 10).max(Duration::from_secs(10))
}

impl<E: Executor + ?Sized> Executor for Patient<'_, E> {
    fn execute(&mut self, input: &[u8]) -> End {
        self.runner.execute(input)
    }
    fn region(&self) -> RegionRef<'_> {
        self.runner.region()
    }
    fn catalog(&self) -> &[SiteInfo] {
        self.runner.catalog()
    }
    fn coverage(&mut self) -> Coverage<'_> {
        self.runner.coverage()
    }
    fn flags(&self) -> u64 {
        self.runner.flags()
    }
    fn set_flags(&mut self, flags: u64) {
        self.runner.set_flags(flags);
    }
    fn timeout(&self) -> Option<Duration> {
        self.runner.timeout()
    }
    fn set_timeout(&mut self, timeout: Duration) {
        self.runner.set_timeout(timeout);
    }

    fn run(&mut self, input: &[u8]) -> RunRecord {
        let record = self.runner.run(input);
        let (Outcome::Timeout, Some(timeout)) = (&record.outcome, self.runner.timeout()) else {
            return record;
        };
        if self.expected.is_none_or(|s| *s == Signature::Timeout) {
            return record;
        }
        self.runner.set_timeout(patient_limit(timeout));
        let again = self.runner.run(input);
        self.runner.set_timeout(timeout);
        again
    }
}

/// Where and how findings are written.
#[derive(Debug, Clone, Copy)]
pub struct Pipeline<'a> {
    /// The campaign's findings folder.
    pub dir: &'a Path,
    /// Runs the shrinker may spend per finding.
    pub shrink_budget: u64,
    /// The per-run limit of isolated replays (of failures that hang or kill
    /// the process).
    pub timeout: Duration,
    /// How a finding is reproduced (written into finding.json): a template
    /// whose `{input}` stands for the finding's input file; `None`: this
    /// binary's own `replay` command.
    pub reproduce: Option<&'a Value>,
}

/// Processes one failing input into a finding folder. `seen` is the failure
/// the explorer saw; it is the finding's signature if any of [`REPLAYS`]
/// replays fails that way (a [`process_death`] names no failure: the first
/// replay's is taken). Failures that hang or kill the process are replayed
/// through `exec`'s isolated form, with at most [`SLOW_SHRINK_BUDGET`] runs
/// spent shrinking them. `known` holds the folder names of findings so far.
pub fn process(
    exec: &mut (impl Executor + ?Sized),
    input: &[u8],
    seen: Option<&Signature>,
    found: Found,
    known: &mut BTreeSet<String>,
    pipeline: &Pipeline<'_>,
) -> Result<Processed, Unwritable> {
    let expected = seen.filter(|s| !is_process_death(s));
    let slow = seen.is_some_and(needs_isolation);
    if slow && let Some(mut isolated) = exec.isolated(pipeline.timeout) {
        let budget = pipeline.shrink_budget.min(SLOW_SHRINK_BUDGET);
        return process_with(
            &mut *isolated,
            input,
            expected,
            found,
            known,
            pipeline,
            budget,
        );
    }
    let budget = if seen == Some(&Signature::Timeout) {
        pipeline.shrink_budget.min(SLOW_SHRINK_BUDGET)
    } else {
        pipeline.shrink_budget
    };
    process_with(exec, input, expected, found, known, pipeline, budget)
}

fn process_with(
    runner: &mut (impl Executor + ?Sized),
    input: &[u8],
    expected: Option<&Signature>,
    found: Found,
    known: &mut BTreeSet<String>,
    pipeline: &Pipeline<'_>,
    shrink_budget: u64,
) -> Result<Processed, Unwritable> {
    let dir = pipeline.dir;
    let reproduce = pipeline.reproduce;
    let confirmation = confirm(&mut Patient { runner, expected }, input, expected, REPLAYS);
    let Some(signature) = confirmation
        .signature
        .clone()
        .filter(|_| confirmation.reproduced > 0)
    else {
        return Ok(Processed::Unconfirmed);
    };
    let name = slug(&signature);
    if known.contains(&name) || stored_under_another_name(dir, known, &signature) {
        return Ok(Processed::Known);
    }
    let flaky = !confirmation.is_stable();
    let verdict = &confirmation.verdict;
    let (shrunk, shrink_runs) = if flaky {
        (input.to_vec(), 0)
    } else {
        shrink(runner, input, &signature, shrink_budget)
            .map_or((input.to_vec(), 0), |s| (s.input, s.runs))
    };
    let prefix = if flaky {
        None
    } else {
        bisect_prefix(runner, input, &signature)
    };
    runner.set_flags(FLAG_TRACE_SITES);
    let record = Patient {
        runner: &mut *runner,
        expected: Some(&signature),
    }
    .run(&shrunk);
    runner.set_flags(0);
    let decisions = explain(&record);
    let faults_fired: Vec<&str> = decisions
        .iter()
        .filter(|d| d.value != 0)
        .filter_map(|d| d.fault.as_deref())
        .collect();
    let description = describe(&record, runner.catalog());
    let mut file = FindingFile {
        version: FINDING_VERSION,
        signature: Some(signature.clone()),
        flaky: Some(flaky),
        determinism: Some(verdict.clone()),
        reproduced: Some(Reproduced {
            replays: confirmation.runs,
            failed: confirmation.reproduced,
        }),
        found_at: Some(FoundAt {
            executions: found.executions,
            seconds: found.seconds,
        }),
        input: Some(InputLengths {
            original_len: input.len(),
            shrunk_len: shrunk.len(),
            prefix_len: prefix.as_ref().map(|(p, _)| p.len()),
        }),
        shrink_runs: Some(shrink_runs),
        decision_count: Some(record.decision_count),
        faults_fired: faults_fired.into_iter().map(str::to_string).collect(),
        schedule: schedule(&record),
        decisions,
        ..FindingFile::described(&description)
    };
    let path = dir.join(&name);
    let input_path = path.join("input");
    file.reproduce = match reproduce {
        // A template: "{input}" stands for the finding's input file.
        Some(Value::Object(template)) => Some(
            template
                .iter()
                .map(|(k, v)| {
                    let text = v.as_str().unwrap_or_default();
                    let text = text.replace("{input}", &input_path.display().to_string());
                    (k.clone(), text)
                })
                .collect(),
        ),
        _ => std::env::current_exe().ok().map(|binary| {
            [
                (
                    "explain".to_string(),
                    format!("{} replay {}", binary.display(), input_path.display()),
                ),
                (
                    "debugger".to_string(),
                    format!(
                        "DST_INPUT={} gdb --args {} run",
                        input_path.display(),
                        binary.display()
                    ),
                ),
            ]
            .into_iter()
            .collect()
        }),
    };

    // Write into a temporary folder, then rename it into place.
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|source| Unwritable {
        path: tmp.clone(),
        source,
    })?;
    write(&tmp.join("input"), &shrunk)?;
    write(&tmp.join("original"), input)?;
    if let Some((prefix, _)) = &prefix {
        write(&tmp.join("prefix"), prefix)?;
    }
    let text = serde_json::to_vec_pretty(&file).expect("a finding record serializes");
    write(&tmp.join("finding.json"), &text)?;
    if let Err(source) = std::fs::rename(&tmp, &path) {
        let _ = std::fs::remove_dir_all(&tmp);
        if path.exists() {
            // Another client reported this signature first.
            known.insert(name);
            return Ok(Processed::Known);
        }
        return Err(Unwritable { path, source });
    }
    known.insert(name);
    Ok(Processed::New(FindingSummary {
        signature,
        path,
        executions: found.executions,
        seconds: found.seconds,
        input_len: input.len(),
        shrunk_len: shrunk.len(),
        flaky,
    }))
}

/// The summary of a finding folder written by [`process`] (for campaigns
/// whose findings were made by other processes).
pub fn read_summary(path: &Path) -> Option<FindingSummary> {
    let record = FindingFile::read(path)?;
    let (found_at, input) = (record.found_at?, record.input?);
    Some(FindingSummary {
        signature: record.signature?,
        path: path.to_path_buf(),
        executions: found_at.executions,
        seconds: found_at.seconds,
        input_len: input.original_len,
        shrunk_len: input.shrunk_len,
        flaky: record.flaky?,
    })
}

/// Whether a finding folder of `known` in `dir` records `signature`
/// under a name that is not its slug: one written before its signature's
/// text changed (a crash place before version 2), whose folder is named
/// after the old text. Read only when a failure is not known by name, a
/// rare event.
fn stored_under_another_name(dir: &Path, known: &BTreeSet<String>, signature: &Signature) -> bool {
    known.iter().any(|folder| {
        FindingFile::read(&dir.join(folder))
            .and_then(|f| f.signature)
            .as_ref()
            == Some(signature)
    })
}

/// A crash place as levels wrote it before version 2, as it is written
/// now: the emulator's, wasm's and KVM's `function at FILE:LINE` becomes
/// `function (FILE:LINE)` (the emulator's `? at FILE:LINE`, for an
/// unknown function, `FILE:LINE`), KVM's `rip 0x...` becomes `pc 0x...`;
/// `None` for a place already so. The process level's symbolized places
/// (`function (FILE:LINE), stack HASH`) never changed; its unsymbolized
/// ones (`0x..., stack HASH`, now `pc 0x..., stack HASH`) are not
/// converted: such a pc moves with address-space randomization, so those
/// signatures never matched across campaigns. Nor is KVM's `rip 0x...` for
/// a place with a line but no function, now `FILE:LINE`.
pub fn current_place(at: &str) -> Option<String> {
    if let Some(pc) = at.strip_prefix("rip 0x") {
        return Some(format!("pc 0x{pc}"));
    }
    let (function, location) = at.rsplit_once(" at ")?;
    let (_, line) = location.rsplit_once(':')?;
    if line.parse::<u32>().is_err() || at.contains(", stack ") {
        return None;
    }
    Some(if function == "?" {
        location.to_string()
    } else {
        format!("{function} ({location})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `finding.json` as the pipeline wrote it before the format had a
    /// version (2026-12-06).
    const BEFORE_VERSIONS: &str = r#"{
      "kind": "assertion_failure", "property": "always",
      "message": "the balance never goes negative", "condition": "balance >= 0",
      "details": {"balance": -3}, "location": "src/bank.rs:41:9",
      "signature": {"kind": "property", "message": "the balance never goes negative"},
      "flaky": false,
      "determinism": {"verdict": "stable", "runs": 5},
      "reproduced": {"replays": 5, "failed": 5},
      "found_at": {"executions": 1234, "seconds": 0.5},
      "input": {"original_len": 40, "shrunk_len": 12, "prefix_len": null},
      "shrink_runs": 50, "decision_count": 2, "faults_fired": ["drop the reply"],
      "decisions": [{"index": 0, "kind": "fault", "value": 1, "offset": 0, "width": 1,
                     "location": "src/bank.rs:30:5", "fault": "drop the reply"}],
      "schedule": [],
      "reproduce": {"explain": "bank replay x/input", "debugger": "DST_INPUT=x/input gdb --args bank run"}
    }"#;

    #[test]
    fn crash_places_written_before_version_2_read_as_now() {
        assert_eq!(
            current_place("main at prog.c:7").as_deref(),
            Some("main (prog.c:7)")
        );
        assert_eq!(current_place("rip 0x2010").as_deref(), Some("pc 0x2010"));
        assert_eq!(current_place("? at f.c:3").as_deref(), Some("f.c:3"));
        assert_eq!(current_place("main (prog.c:7), stack 1a2b3c4d"), None);
        assert_eq!(current_place("f+0x20"), None);
        let old = br#"{"version": 1, "signature": {"kind": "crash", "cause": "SIGSEGV", "at": "main at prog.c:7"}}"#;
        let file = FindingFile::parse(old).expect("reads");
        assert_eq!(
            file.signature,
            Some(Signature::Crash {
                cause: "SIGSEGV".into(),
                at: "main (prog.c:7)".into()
            })
        );
        let new = br#"{"version": 2, "signature": {"kind": "crash", "cause": "SIGSEGV", "at": "x at y:1"}}"#;
        let file = FindingFile::parse(new).expect("reads");
        assert!(
            matches!(&file.signature, Some(Signature::Crash { at, .. }) if at == "x at y:1"),
            "a current file is read as written"
        );
    }

    #[test]
    fn a_finding_stored_under_its_old_place_is_known_by_its_signature() {
        let dir = std::env::temp_dir().join(format!("dst-legacy-finding-{}", std::process::id()));
        let old = Signature::Crash {
            cause: "SIGSEGV".into(),
            at: "main at prog.c:7".into(),
        };
        let folder = slug(&old);
        std::fs::create_dir_all(dir.join(&folder)).unwrap();
        std::fs::write(
            dir.join(&folder).join("finding.json"),
            br#"{"version": 1, "signature": {"kind": "crash", "cause": "SIGSEGV", "at": "main at prog.c:7"}}"#,
        )
        .unwrap();
        let known = BTreeSet::from([folder]);
        let now = Signature::Crash {
            cause: "SIGSEGV".into(),
            at: "main (prog.c:7)".into(),
        };
        assert!(!known.contains(&slug(&now)), "the folder has the old name");
        assert!(stored_under_another_name(&dir, &known, &now));
        let other = Signature::Crash {
            cause: "SIGSEGV".into(),
            at: "main (prog.c:8)".into(),
        };
        assert!(!stored_under_another_name(&dir, &known, &other));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_finding_file_from_before_versions_reads_and_writes_back_alike() {
        let file = FindingFile::parse(BEFORE_VERSIONS.as_bytes()).expect("an old file reads");
        assert_eq!(file.version, 0);
        assert_eq!(
            file.signature,
            Some(Signature::Property {
                message: "the balance never goes negative".into()
            })
        );
        assert_eq!(file.found_at.map(|f| f.executions), Some(1234));
        assert_eq!(file.input.map(|i| i.shrunk_len), Some(12));
        assert_eq!(file.decisions[0].fault.as_deref(), Some("drop the reply"));
        assert_eq!(
            file.reproduce
                .as_ref()
                .and_then(|r| r.get("explain"))
                .map(String::as_str),
            Some("bank replay x/input")
        );
        // Written back, every key of the old file is there with its value.
        let old: Value = serde_json::from_str(BEFORE_VERSIONS).unwrap();
        let new = serde_json::to_value(&file).unwrap();
        for (key, value) in old.as_object().unwrap() {
            assert_eq!(&new[key], value, "{key}");
        }
        assert_eq!(new["version"], 0);
    }

    #[test]
    fn a_damaged_finding_file_reads_as_far_as_it_goes_or_not_at_all() {
        let partial = FindingFile::parse(br#"{"message": "m", "version": 1}"#).unwrap();
        assert_eq!(partial.message.as_deref(), Some("m"));
        assert_eq!(partial.signature, None);
        assert!(
            FindingFile::parse(br#"{"flaky": "yes"}"#).is_none(),
            "a wrong type"
        );
        assert!(FindingFile::parse(b"{").is_none());
        assert!(FindingFile::parse(b"[]").is_none());
    }
}
