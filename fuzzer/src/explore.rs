//! The fuzzing loop: LibAFL wired to a dst target.
//!
//! One client: a LibAFL `StdFuzzer` whose harness runs the target through
//! `dst_executors::InProcess`. Observers: the binary's sanitizer edge
//! counters, the region's decision coverage, and the [`PropertyObserver`].
//! Feedbacks: new edges, new decision values, property novelty. Objective: a
//! new failure signature. Stages: havoc, then the decision-aware mutators.
//! Between iterations the loop turns solutions into findings, saves the
//! corpus and the campaign, and prints a status line each second.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use dst_executors::{Executor as _, InProcess};
use dst_kernel::Campaign;
use libafl::HasMetadata;
use libafl::corpus::{Corpus, InMemoryCorpus};
use libafl::events::SimpleEventManager;
use libafl::executors::{ExitKind, inprocess::InProcessExecutor};
use libafl::feedback_or;
use libafl::feedbacks::MaxMapFeedback;
use libafl::fuzzer::{Evaluator, Fuzzer, StdFuzzer};
use libafl::inputs::BytesInput;
use libafl::monitors::NopMonitor;
use libafl::mutators::{HavocScheduledMutator, havoc_mutations};
use libafl::observers::{HitcountsMapObserver, StdMapObserver};
use libafl::schedulers::QueueScheduler;
use libafl::stages::StdMutationalStage;
use libafl::state::{HasCorpus, HasExecutions, HasMaxSize, HasSolutions, StdState};
use libafl_bolts::rands::StdRand;
use libafl_bolts::tuples::tuple_list;

use crate::coverage;
use crate::feedback::{
    self, CampaignMeta, FindingObjective, PropertyFeedback, PropertyObserver, SpansFeedback,
};
use crate::findings::{self, FindingSummary};
use crate::mutators::{ChangeDecision, SpliceDecisions, ZeroDecisions};
use crate::store::{self, StoreError};

/// What a campaign is asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The target's name (for messages and paths).
    pub name: String,
    /// Stop after this many executions.
    pub runs: Option<u64>,
    /// Stop after this long.
    pub time: Option<Duration>,
    /// Seed of the explorer's own randomness.
    pub seed: u64,
    pub corpus_dir: PathBuf,
    pub findings_dir: PathBuf,
    pub campaign_file: PathBuf,
    /// Per-run time limit.
    pub timeout: Duration,
    /// Print a status line every second (to stderr).
    pub status: bool,
    /// Runs the shrinker may spend per finding.
    pub shrink_budget: u64,
    /// Stop at the first finding.
    pub stop_on_finding: bool,
}

/// What a campaign did.
#[derive(Debug, Clone)]
pub struct Summary {
    pub executions: u64,
    pub seconds: f64,
    pub corpus: usize,
    pub edges: usize,
    pub findings: Vec<FindingSummary>,
    pub campaign: Campaign,
}

/// Runs a campaign on `target` until the budget in `options` is spent.
pub fn explore<F: FnMut() + 'static>(target: F, options: &Options) -> Result<Summary, StoreError> {
    let started = Instant::now();
    let exec = Rc::new(RefCell::new(InProcess::new(target)));
    let catalog = exec.borrow().catalog();
    feedback::set_region(exec.borrow().view());

    let campaign = match store::load_campaign(&options.campaign_file)? {
        Some(saved) if saved.catalog == catalog => saved,
        Some(_) => {
            eprintln!(
                "dst-fuzz: the target's properties changed since {} was saved; starting a new campaign",
                options.campaign_file.display()
            );
            Campaign::new(catalog.clone())
        }
        None => Campaign::new(catalog.clone()),
    };
    let executions_before = campaign.executions;
    let mut known_findings = store::known_findings(&options.findings_dir)?;
    store::ensure_dir(&options.corpus_dir)?;
    store::ensure_dir(&options.findings_dir)?;

    let (edges_ptr, edges_len) = coverage::edges();
    // SAFETY: the counters live in the binary's static memory (or a static
    // fallback) for the whole process, longer than the observer.
    let edges = HitcountsMapObserver::new(unsafe {
        StdMapObserver::from_mut_ptr("edges", edges_ptr, edges_len)
    });
    let (decisions_ptr, decisions_len) = exec.borrow().view().coverage_ptr();
    // SAFETY: the region is owned by `exec`, which lives until the end of
    // this function, after the observer is dropped.
    let decisions = HitcountsMapObserver::new(unsafe {
        StdMapObserver::from_mut_ptr("decisions", decisions_ptr, decisions_len)
    });
    let properties = PropertyObserver::new();

    let mut feedback = feedback_or!(
        MaxMapFeedback::new(&edges),
        MaxMapFeedback::new(&decisions),
        PropertyFeedback::new(&properties, campaign),
        SpansFeedback
    );
    let mut objective = FindingObjective::new(&properties);
    let mut state = StdState::new(
        StdRand::with_seed(options.seed),
        InMemoryCorpus::<BytesInput>::new(),
        InMemoryCorpus::new(),
        &mut feedback,
        &mut objective,
    )
    .map_err(StoreError::libafl)?;
    state.set_max_size(1 << 16);
    let mut mgr = SimpleEventManager::new(NopMonitor::new());
    let mut fuzzer = StdFuzzer::new(QueueScheduler::new(), feedback, objective);

    let harness_exec = exec.clone();
    let mut harness = move |input: &BytesInput| {
        let crash = harness_exec.borrow_mut().run_raw(input.as_ref());
        let kind = if crash.is_some() {
            ExitKind::Crash
        } else {
            ExitKind::Ok
        };
        feedback::set_last_crash(crash);
        kind
    };
    let mut executor = InProcessExecutor::builder()
        .harness(&mut harness)
        .observers(tuple_list!(edges, decisions, properties))
        .timeout(options.timeout)
        .fuzzer(&mut fuzzer)
        .state(&mut state)
        .event_mgr(&mut mgr)
        .build()
        .map_err(StoreError::libafl)?;

    // Seeds: the saved corpus, the nominal run, and a few random tails.
    let mut seeds = store::load_corpus(&options.corpus_dir)?;
    seeds.push(Vec::new());
    seeds.extend((1..=8u64).map(|i| {
        (options.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i)
            .max(1)
            .to_le_bytes()
            .to_vec()
    }));
    for seed in &seeds {
        fuzzer
            .evaluate_input(
                &mut state,
                &mut executor,
                &mut mgr,
                &BytesInput::new(seed.clone()),
            )
            .map_err(StoreError::libafl)?;
    }
    if state.corpus().count() == 0 {
        fuzzer
            .add_input(
                &mut state,
                &mut executor,
                &mut mgr,
                BytesInput::new(Vec::new()),
            )
            .map_err(StoreError::libafl)?;
    }

    let mut stages = tuple_list!(
        StdMutationalStage::new(HavocScheduledMutator::new(havoc_mutations())),
        StdMutationalStage::new(HavocScheduledMutator::new(tuple_list!(
            ChangeDecision,
            ZeroDecisions,
            SpliceDecisions
        )))
    );

    let mut saved_corpus = 0usize;
    let mut processed_solutions = 0usize;
    let mut last_status = Instant::now();
    let mut last_status_execs = 0u64;
    let mut findings = Vec::new();
    loop {
        let executions = *state.executions();
        let elapsed = started.elapsed();
        if options.runs.is_some_and(|r| executions >= r)
            || options.time.is_some_and(|t| elapsed >= t)
            || (options.stop_on_finding && !findings.is_empty())
        {
            break;
        }
        fuzzer
            .fuzz_one(&mut stages, &mut executor, &mut state, &mut mgr)
            .map_err(StoreError::libafl)?;

        while processed_solutions < state.solutions().count() {
            let id = state.solutions().nth(processed_solutions);
            processed_solutions += 1;
            let input = state
                .solutions()
                .cloned_input_for_id(id)
                .map_err(StoreError::libafl)?
                .into_inner();
            let found = findings::Found {
                executions: executions_before + *state.executions(),
                seconds: started.elapsed().as_secs_f64(),
            };
            let mut runner = exec.borrow_mut();
            if let Some(summary) = findings::process(
                &mut *runner,
                &catalog,
                &input,
                found,
                &options.findings_dir,
                &mut known_findings,
                options.shrink_budget,
            )? {
                if options.status {
                    eprintln!(
                        "dst-fuzz: finding: {} -> {}",
                        summary.signature,
                        summary.path.display()
                    );
                }
                findings.push(summary);
            }
        }

        if last_status.elapsed() >= Duration::from_secs(1) {
            let executions = *state.executions();
            saved_corpus = store::save_corpus(&state, saved_corpus, &options.corpus_dir)?;
            let campaign = &state
                .metadata::<CampaignMeta>()
                .map_err(StoreError::libafl)?
                .campaign;
            store::save_campaign(campaign, &options.campaign_file)?;
            if options.status {
                let rate =
                    (executions - last_status_execs) as f64 / last_status.elapsed().as_secs_f64();
                eprintln!(
                    "{}",
                    status_line(
                        executions_before + executions,
                        rate,
                        state.corpus().count(),
                        coverage::covered(&state),
                        campaign,
                        known_findings.len()
                    )
                );
            }
            last_status = Instant::now();
            last_status_execs = executions;
        }
    }
    store::save_corpus(&state, saved_corpus, &options.corpus_dir)?;
    let campaign = state
        .metadata::<CampaignMeta>()
        .map_err(StoreError::libafl)?
        .campaign
        .clone();
    store::save_campaign(&campaign, &options.campaign_file)?;
    Ok(Summary {
        executions: *state.executions(),
        seconds: started.elapsed().as_secs_f64(),
        corpus: state.corpus().count(),
        edges: coverage::covered(&state),
        findings,
        campaign,
    })
}

/// The once-a-second status line.
pub fn status_line(
    executions: u64,
    rate: f64,
    corpus: usize,
    edges: usize,
    campaign: &Campaign,
    findings: usize,
) -> String {
    let (passing, failing, unfound) = crate::report::counts(campaign);
    format!(
        "#{executions} exec/s {rate:.0} corpus {corpus} edges {edges} properties {passing} passing, {failing} failing, {unfound} unfound findings {findings}"
    )
}
