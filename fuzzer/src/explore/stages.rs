//! The client's own LibAFL stages, after the mutational ones: turning new
//! solutions into findings, and saving and reporting once a second. They
//! share what the loop needs to know through [`Progress`].

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use dst_kernel::finding::{self, FindingSummary, Found, Pipeline, Processed, REPLAYS};
use libafl::corpus::Corpus;
use libafl::events::{Event, EventFirer, EventWithStats, ProgressReporter};
use libafl::inputs::BytesInput;
use libafl::stages::Stage;
use libafl::state::{HasCorpus, HasExecutions, HasSolutions};
use libafl::{Error, HasMetadata};

use super::Options;
use super::{State, always_restartable};
use crate::explore::feedback::{CampaignMeta, SeenSignatures, SharedTarget, SolutionSignature};
use crate::store::{self, StoreError};

/// What the stages learned, for the loop and for each other.
#[derive(Debug)]
pub(super) struct Progress {
    /// Findings this client reported.
    pub findings: Vec<FindingSummary>,
    /// Finding folders on disk (this client's and others').
    pub known: BTreeSet<String>,
    /// Corpus entries saved so far.
    pub saved_corpus: usize,
    /// Solutions turned into findings (or found known) so far.
    pub processed: usize,
    /// Failures that did not come back when their input was replayed.
    pub unconfirmed: usize,
    /// The error that stopped a stage (LibAFL's error type cannot carry it).
    pub error: Option<StoreError>,
    /// The campaign over time.
    stats: crate::stats::Stats,
    /// The edge map's size (for AFL's coverage percentage).
    map_size: usize,
}

impl Progress {
    pub fn new(known: BTreeSet<String>, campaign_file: &Path, map_size: usize) -> Progress {
        Progress {
            findings: Vec::new(),
            known,
            saved_corpus: 0,
            processed: 0,
            unconfirmed: 0,
            error: None,
            stats: crate::stats::Stats::open(crate::stats::dir_for(campaign_file)),
            map_size,
        }
    }

    /// Appends a point to the campaign's series (see [`crate::stats`]).
    pub fn record(
        &mut self,
        state: &State,
        campaign: &dst_kernel::Campaign,
        executions: u64,
        rate: f64,
        campaign_file: &Path,
    ) -> Result<(), StoreError> {
        let (passing, failing, unfound) = crate::report::counts(campaign);
        let hangs = self
            .known
            .iter()
            .filter(|n| n.starts_with("timeout"))
            .count();
        let point = crate::stats::Point {
            executions,
            exec_per_sec: rate,
            edges: crate::explore::monitor::covered(state),
            corpus: state.corpus().count(),
            passing,
            failing,
            unfound,
            crashes: self.known.len() - hangs,
            hangs,
            ..Default::default()
        };
        self.stats
            .record(point, self.map_size)
            .map_err(|source| StoreError::Unwritable {
                path: crate::stats::dir_for(campaign_file),
                source,
            })
    }

    /// Whether the campaign's budget is spent (or its first finding made,
    /// when asked to stop there).
    pub fn spent(&self, options: &Options, executions: u64, elapsed: Duration) -> bool {
        options.runs.is_some_and(|r| executions >= r)
            || options.time.is_some_and(|t| elapsed >= t)
            || (options.stop_on_finding && !self.findings.is_empty())
            || (options.stop_on_unconfirmed && self.unconfirmed > 0)
    }

    /// Keeps `error` for the loop and gives LibAFL one it can carry.
    fn fail(&mut self, error: StoreError) -> Error {
        let carried = Error::unknown(error.to_string());
        self.error = Some(error);
        carried
    }
}

/// Turns each new solution into a finding through the kernel's pipeline.
pub(super) struct FindingStage {
    target: SharedTarget,
    findings_dir: PathBuf,
    shrink_budget: u64,
    timeout: Duration,
    reproduce: Option<serde_json::Value>,
    status: bool,
    progress: Rc<RefCell<Progress>>,
    started: Instant,
    executions_before: u64,
}

impl FindingStage {
    pub fn new(
        target: SharedTarget,
        options: &Options,
        progress: Rc<RefCell<Progress>>,
        started: Instant,
        executions_before: u64,
    ) -> FindingStage {
        FindingStage {
            target,
            findings_dir: options.findings_dir.clone(),
            shrink_budget: options.shrink_budget,
            timeout: options.timeout,
            reproduce: options.reproduce.clone(),
            status: options.status,
            progress,
            started,
            executions_before,
        }
    }

    fn process_one(&mut self, state: &mut State) -> Result<(), StoreError> {
        let id = {
            let mut progress = self.progress.borrow_mut();
            progress.processed += 1;
            state.solutions().nth(progress.processed - 1)
        };
        let input = state
            .solutions()
            .cloned_input_for_id(id)
            .map_err(StoreError::libafl)?
            .into_inner();
        let (seen, seen_at) = state
            .solutions()
            .get(id)
            .ok()
            .and_then(|t| {
                let t = t.borrow();
                let meta = t.metadata::<SolutionSignature>().ok()?;
                Some((meta.signature(), meta.executions))
            })
            .unwrap_or((None, 0));
        let seen_at = if seen_at == 0 {
            *state.executions()
        } else {
            seen_at
        };
        let found = Found {
            executions: self.executions_before + seen_at,
            seconds: self.started.elapsed().as_secs_f64(),
        };
        let pipeline = Pipeline {
            dir: &self.findings_dir,
            shrink_budget: self.shrink_budget,
            timeout: self.timeout,
            reproduce: self.reproduce.as_ref(),
        };
        let mut progress = self.progress.borrow_mut();
        let processed = finding::process(
            &mut *self.target.borrow_mut().exec,
            &input,
            seen.as_ref(),
            found,
            &mut progress.known,
            &pipeline,
        )?;
        match processed {
            Processed::New(summary) => {
                if self.status {
                    eprintln!(
                        "dst-fuzz: finding: {} -> {}",
                        summary.signature,
                        summary.path.display()
                    );
                }
                progress.findings.push(summary);
            }
            Processed::Known => {}
            Processed::Unconfirmed => {
                progress.unconfirmed += 1;
                let what = seen
                    .as_ref()
                    .map_or("a failure".to_string(), |s| s.to_string());
                eprintln!(
                    "dst-fuzz: {what} did not come back in {REPLAYS} replays of its input; not reported (flaky target?)"
                );
                // Not a finding after all: the next input that fails this
                // way is a solution again.
                if let Some(signature) = &seen {
                    state
                        .metadata_mut::<SeenSignatures>()
                        .map_err(StoreError::libafl)?
                        .seen
                        .remove(&SolutionSignature::new(signature).signature);
                }
            }
        }
        Ok(())
    }
}

impl<E, EM, Z> Stage<E, EM, State, Z> for FindingStage {
    fn perform(
        &mut self,
        _fuzzer: &mut Z,
        _executor: &mut E,
        state: &mut State,
        _manager: &mut EM,
    ) -> Result<(), Error> {
        self.drain(state)
    }
}

impl FindingStage {
    /// Turns every solution not yet processed into a finding.
    pub(super) fn drain(&mut self, state: &mut State) -> Result<(), Error> {
        while self.progress.borrow().processed < state.solutions().count() {
            if let Err(e) = self.process_one(state) {
                return Err(self.progress.borrow_mut().fail(e));
            }
        }
        Ok(())
    }
}

always_restartable!(FindingStage);

/// Once a second: saves new corpus entries and the campaign, sends the
/// statistics to the monitor, and prints the status line if asked.
pub(super) struct SaveStage {
    corpus_dir: PathBuf,
    findings_dir: PathBuf,
    campaign_file: PathBuf,
    status: bool,
    progress: Rc<RefCell<Progress>>,
    executions_before: u64,
    last: Instant,
    last_executions: u64,
}

impl SaveStage {
    pub fn new(
        options: &Options,
        campaign_file: &Path,
        progress: Rc<RefCell<Progress>>,
        executions_before: u64,
        executions: u64,
    ) -> SaveStage {
        SaveStage {
            corpus_dir: options.corpus_dir.clone(),
            findings_dir: options.findings_dir.clone(),
            campaign_file: campaign_file.to_path_buf(),
            status: options.status,
            progress,
            executions_before,
            last: Instant::now(),
            last_executions: executions,
        }
    }

    fn save<EM>(&mut self, state: &mut State, mgr: &mut EM) -> Result<(), StoreError>
    where
        EM: EventFirer<BytesInput, State> + ProgressReporter<State>,
    {
        mgr.maybe_report_progress(state, Duration::from_secs(1))
            .map_err(StoreError::libafl)?;
        if self.last.elapsed() < Duration::from_secs(1) {
            return Ok(());
        }
        let executions = *state.executions();
        let mut progress = self.progress.borrow_mut();
        progress.saved_corpus = store::save_corpus(state, progress.saved_corpus, &self.corpus_dir)?;
        progress.known = store::known_findings(&self.findings_dir)?;
        let campaign = &state
            .metadata::<CampaignMeta>()
            .map_err(StoreError::libafl)?
            .campaign;
        store::save_campaign(campaign, &self.campaign_file)?;
        let edges = crate::explore::monitor::covered(state);
        let stats = crate::explore::monitor::user_stats(campaign, edges, progress.known.len());
        let rate = (executions - self.last_executions) as f64 / self.last.elapsed().as_secs_f64();
        progress.record(
            state,
            campaign,
            self.executions_before + executions,
            rate,
            &self.campaign_file,
        )?;
        let line = self.status.then(|| {
            super::status_line(
                self.executions_before + executions,
                rate,
                state.corpus().count(),
                edges,
                campaign,
                progress.known.len(),
            )
        });
        mgr.fire(
            state,
            EventWithStats::with_current_time(
                Event::UpdateUserStatsMap {
                    stats,
                    phantom: PhantomData,
                },
                executions,
            ),
        )
        .map_err(StoreError::libafl)?;
        if let Some(line) = line {
            eprintln!("{line}");
        }
        self.last = Instant::now();
        self.last_executions = executions;
        Ok(())
    }
}

impl<E, EM, Z> Stage<E, EM, State, Z> for SaveStage
where
    EM: EventFirer<BytesInput, State> + ProgressReporter<State>,
{
    fn perform(
        &mut self,
        _fuzzer: &mut Z,
        _executor: &mut E,
        state: &mut State,
        manager: &mut EM,
    ) -> Result<(), Error> {
        self.save(state, manager)
            .map_err(|e| self.progress.borrow_mut().fail(e))
    }
}

always_restartable!(SaveStage);
