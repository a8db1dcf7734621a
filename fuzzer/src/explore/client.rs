//! One client: the LibAFL fuzzer around a target, seeded, run until the
//! budget is spent.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use dst_kernel::{Campaign, End, Executor, finding};
use libafl::HasMetadata;
use libafl::corpus::{Corpus, InMemoryCorpus};
use libafl::events::{
    AwaitRestartSafe, EventFirer, EventReceiver, EventRestarter, HasEventManagerId,
    ProgressReporter, SendExiting,
};
use libafl::executors::ExitKind;
use libafl::executors::hooks::inprocess::HasTimeout;
use libafl::executors::hooks::timer::TimerStruct;
use libafl::executors::inprocess::{HasInProcessHooks, InProcessExecutor};
use libafl::feedback_or;
use libafl::feedbacks::MaxMapFeedback;
use libafl::fuzzer::{Evaluator, Fuzzer, HasObjective, StdFuzzer};
use libafl::inputs::BytesInput;
use libafl::mutators::{HavocScheduledMutator, Tokens, havoc_mutations, tokens_mutations};
use libafl::observers::{CanTrack, StdMapObserver};
use libafl::schedulers::{IndexesLenTimeMinimizerScheduler, QueueScheduler, StdWeightedScheduler};
use libafl::stages::{IfStage, StdMutationalStage};
use libafl::state::{HasCorpus, HasExecutions, HasMaxSize, StdState};
use libafl_bolts::rands::StdRand;
use libafl_bolts::tuples::{Merge, tuple_list};

use super::chain::{self, ChainStage};
use super::schedule::{Sched, WeighStage};
use super::stages::{FindingStage, Progress, SaveStage};
use super::{Options, RANDOM_SEEDS, RANDOM_SEEDS_THREADS, State, Summary};
use crate::explore::feedback::{
    CampaignMeta, EdgesFeedback, FindingObjective, FindingsAtStart, PropertyFeedback,
    PropertyObserver, SpansFeedback, Target, classify_counts,
};
use crate::explore::mutators::{
    BufferHavoc, CapBuffer, ChangeDecision, FitSteps, KeepSeed, LengthControl, SpliceDecisions,
    ZeroDecisions, has_buffer,
};
use crate::store::{self, StoreError};

/// What a client needs of its LibAFL event manager (the simple one for a
/// single client, the LLMP restarting one under the launcher).
pub(crate) trait ClientManager:
    EventFirer<BytesInput, State>
    + EventRestarter<State>
    + EventReceiver<BytesInput, State>
    + ProgressReporter<State>
    + SendExiting
    + AwaitRestartSafe
    + HasEventManagerId
{
}

impl<EM> ClientManager for EM where
    EM: EventFirer<BytesInput, State>
        + EventRestarter<State>
        + EventReceiver<BytesInput, State>
        + ProgressReporter<State>
        + SendExiting
        + AwaitRestartSafe
        + HasEventManagerId
{
}

/// One client's campaign: build the fuzzer around `exec`, seed it, fuzz
/// until the budget is spent, and save corpus, findings and campaign (to
/// `campaign_file`) along the way. `restored` is the state a restarting
/// event manager hands back after a crash of this client.
pub(crate) fn client<EM: ClientManager>(
    exec: Box<dyn Executor>,
    options: &Options,
    restored: Option<State>,
    mut mgr: EM,
    campaign: Campaign,
    campaign_file: &Path,
) -> Result<Summary, StoreError> {
    let result = client_inner(exec, options, restored, &mut mgr, campaign, campaign_file);
    // Finished or failed, this client is not to be restarted.
    mgr.send_exiting().map_err(StoreError::libafl)?;
    result
}

/// A limit no run reaches (a century).
const NEVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The time limit LibAFL's executor enforces around one run: the run's own
/// limit for a target in this process; more for an executor that enforces
/// the limit itself (and reports a timeout as an end of run).
fn harness_timeout(exec: &dyn Executor, timeout: Duration) -> Duration {
    match exec.timeout() {
        Some(_) => timeout * 3 + Duration::from_secs(10),
        None => timeout,
    }
}

/// How far seeding got (seeds evaluated, in order: the corpus, the nominal
/// run, the random tails), kept in the state a restarted client gets back.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Seeding {
    next: usize,
}
libafl_bolts::impl_serdeany!(Seeding);

fn client_inner<EM: ClientManager>(
    exec: Box<dyn Executor>,
    options: &Options,
    restored: Option<State>,
    mgr: &mut EM,
    campaign: Campaign,
    campaign_file: &Path,
) -> Result<Summary, StoreError> {
    let started = Instant::now();
    crate::explore::mutators::new_campaign();
    let executions_before = campaign.executions;
    store::ensure_dir(&options.corpus_dir)?;
    store::ensure_dir(&options.findings_dir)?;
    let known = store::known_findings(&options.findings_dir)?;
    let limit = harness_timeout(&*exec, options.timeout);
    let in_this_process = exec.timeout().is_none();
    let ends_overdue_runs = exec.ends_overdue_runs();
    let target = Rc::new(RefCell::new(Target { exec, end: None }));

    let ((edges_ptr, edges_len), (decisions_ptr, decisions_len)) = {
        let mut t = target.borrow_mut();
        let maps = t.exec.coverage();
        (
            (maps.edges.as_mut_ptr(), maps.edges.len()),
            (maps.decisions.as_mut_ptr(), maps.decisions.len()),
        )
    };
    // SAFETY: the executor's maps stay at their addresses for its whole life
    // (the `Executor` protocol); it lives in `target`, which this function
    // holds until after the observers (owned by `executor`) are dropped.
    // Plain map observers: the counts are bucketed by the harness (the
    // decisions, `classify_counts`) and by the edges' feedback
    // (`EdgesFeedback`), cheaper than LibAFL's hit-count observer.
    let edges = unsafe { StdMapObserver::from_mut_ptr("edges", edges_ptr, edges_len) };
    // Indices tracked for the minimizer of the weighted scheduler
    // (`schedule`): recorded for interesting runs only.
    // SAFETY: as above.
    let decisions =
        unsafe { StdMapObserver::from_mut_ptr("decisions", decisions_ptr, decisions_len) }
            .track_indices();
    let properties = PropertyObserver::new(target.clone());

    let runs = Rc::new(Cell::new(0u64));
    // SAFETY: the edge map, as for the observer above; the feedback reads
    // it only after a run.
    let edges_feedback = unsafe {
        EdgesFeedback::new(
            MaxMapFeedback::new(&edges),
            edges_ptr,
            edges_len,
            runs.clone(),
        )
    };
    let mut feedback = feedback_or!(
        edges_feedback,
        MaxMapFeedback::new(&decisions),
        PropertyFeedback::new(&properties, campaign),
        SpansFeedback::new(&properties)
    );
    let mut objective = FindingObjective::new(&properties);
    let mut state = match restored {
        Some(state) => state,
        None => {
            let mut state = StdState::new(
                StdRand::with_seed(options.seed),
                InMemoryCorpus::<BytesInput>::new(),
                InMemoryCorpus::new(),
                &mut feedback,
                &mut objective,
            )
            .map_err(StoreError::libafl)?;
            state.set_max_size(1 << 16);
            if options.len_control > 0 {
                state.add_metadata(LengthControl::new(
                    options.len_control,
                    dst::libfuzzer::max_len(),
                ));
            }
            state.add_metadata(FindingsAtStart {
                names: known.clone(),
            });
            if let Some(tokens) = tokens(options)? {
                state.add_metadata(tokens);
            }
            state
        }
    };
    let weighted = super::schedule::weighted();
    let scheduler = match weighted {
        None => Sched::Queue(QueueScheduler::new()),
        // The minimizer keeps each entry's map indices: WeighStage reads
        // them.
        Some(power) => Sched::Weighted(IndexesLenTimeMinimizerScheduler::non_metadata_removing(
            &decisions,
            StdWeightedScheduler::with_schedule(&mut state, &decisions, power),
        )),
    };
    let mut fuzzer = StdFuzzer::new(scheduler, feedback, objective);
    // Across machines, findings travel with their inputs (`net`).
    fuzzer.set_share_objectives(options.net.is_some());

    let harness_target = target.clone();
    let mut harness = move |input: &BytesInput| {
        let mut t = harness_target.borrow_mut();
        t.end = None;
        runs.set(runs.get() + 1);
        let end = t.exec.execute(input.as_ref());
        // The edge map is classified by its feedback; the decision map here.
        let map = t.exec.coverage().decisions;
        // SAFETY: the executor's map (see above); the run has ended, so
        // nothing else writes it until the next one.
        classify_counts(unsafe { std::slice::from_raw_parts_mut(map.as_mut_ptr(), map.len()) });
        let kind = match end {
            End::Ok => ExitKind::Ok,
            End::Crash(_) => ExitKind::Crash,
            End::Timeout => ExitKind::Timeout,
        };
        t.end = Some(end);
        kind
    };
    let mut executor = InProcessExecutor::builder()
        .harness(&mut harness)
        .observers(tuple_list!(edges, decisions, properties))
        .timeout(limit)
        .fuzzer(&mut fuzzer)
        .state(&mut state)
        .event_mgr(mgr)
        .build()
        .map_err(StoreError::libafl)?;
    if in_this_process {
        // A target in this process: LibAFL's timer armed once and checked
        // per run (it fires within one to two limits, as libFuzzer's
        // alarm does), not two timer_settime calls every run. Executors
        // that enforce their own limit keep the per-run timer: a periodic
        // alarm would interrupt their waits and their guests.
        *executor.inprocess_hooks_mut().timer_mut() = TimerStruct::batch_mode(limit);
    } else if ends_overdue_runs {
        // The executor kills a run past its limit itself: LibAFL's timer
        // is armed once, never to fire (batch mode re-arms only near its
        // limit), instead of two timer_settime calls every run. (Its run
        // counter, a u32, then never resets: it wraps after 2^32 runs,
        // harmlessly in release builds.)
        *executor.inprocess_hooks_mut().timer_mut() = TimerStruct::batch_mode(NEVER);
    }

    if state.corpus().count() == 0 {
        // Seeds: the saved corpus, the nominal run, and random tails: more
        // of them when the nominal run has controlled threads (it took a
        // strategy decision), each then a random schedule of a random
        // strategy (direct, PCT, POS) for mutation to start from.
        let mut seeds = store::load_corpus(&options.corpus_dir)?;
        seeds.extend(options.seeds.iter().cloned());
        seeds.push(Vec::new());
        // A seed that crashes the client (a panic ends the process under
        // LibAFL's handler, which saves the state and the crash) is behind
        // the restarted client, which goes on after it.
        let from = state.metadata::<Seeding>().map_or(0, |s| s.next);
        for (i, seed) in seeds.iter().enumerate().skip(from) {
            state.add_metadata(Seeding { next: i + 1 });
            fuzzer
                .evaluate_input(
                    &mut state,
                    &mut executor,
                    mgr,
                    &BytesInput::new(seed.clone()),
                )
                .map_err(StoreError::libafl)?;
        }
        let threads = target
            .borrow()
            .exec
            .region()
            .decisions()
            .iter()
            .any(|d| d.kind == dst::decision::Kind::Strategy as u8);
        let tails = if threads {
            RANDOM_SEEDS_THREADS
        } else {
            RANDOM_SEEDS
        };
        for i in 1..=tails {
            let next = seeds.len() + i as usize;
            if next <= from {
                continue;
            }
            state.add_metadata(Seeding { next });
            let seed = (options.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i)
                .max(1)
                .to_le_bytes()
                .to_vec();
            fuzzer
                .evaluate_input(&mut state, &mut executor, mgr, &BytesInput::new(seed))
                .map_err(StoreError::libafl)?;
        }
        if state.corpus().count() == 0 {
            fuzzer
                .add_input(&mut state, &mut executor, mgr, BytesInput::new(Vec::new()))
                .map_err(StoreError::libafl)?;
        }
    }

    let progress = Rc::new(RefCell::new(Progress::new(known, campaign_file, edges_len)));
    let cmplog = options.cmplog;
    let calibrate = weighted.is_some();
    let decision_mutations = || tuple_list!(ChangeDecision, ZeroDecisions, SpliceDecisions);
    // Chains for decision streams, LibAFL's stacked havoc for a harness's
    // buffer (a chain's mutants are mostly deep, 5% of its executions are
    // within 4 mutations of the entry against 29% of stacked havoc's, and
    // a parser's structured input needs the shallow ones: libpcap's
    // harness covered 39 edges in 20 s with chains, 405 stacked).
    // `DST_HAVOC=stacked|chained` makes one of them everywhere.
    let havoc = std::env::var("DST_HAVOC").ok();
    let chains_only = havoc.as_deref() == Some("chained");
    let stacked_only = havoc.as_deref() == Some("stacked");
    let chained = move |state: &State| !stacked_only && (chains_only || !has_buffer(state));
    let mut stages = tuple_list!(
        // What the weighted scheduler knows of a new entry (not for the
        // queue scheduler).
        IfStage::new(
            move |_: &mut _, _: &mut _, _: &mut State, _: &mut _| Ok(calibrate),
            tuple_list!(WeighStage),
        ),
        IfStage::new(
            move |_: &mut _, _: &mut _, state: &mut State, _: &mut _| Ok(!chained(state)),
            tuple_list!(
                StdMutationalStage::new(FitSteps::new(CapBuffer::new(KeepSeed::new(
                    HavocScheduledMutator::new(havoc_mutations())
                )))),
                StdMutationalStage::new(FitSteps::new(CapBuffer::new(HavocScheduledMutator::new(
                    decision_mutations()
                )))),
            ),
        ),
        IfStage::new(
            move |_: &mut _, _: &mut _, state: &mut State, _: &mut _| Ok(chained(state)),
            tuple_list!(
                ChainStage::new(FitSteps::new(KeepSeed::new(chain::step(havoc_mutations())))),
                ChainStage::new(FitSteps::new(chain::step(decision_mutations()))),
            ),
        ),
        // Once per corpus entry: a run with comparisons logged (a target
        // that logs none costs that run, and draws no random number).
        IfStage::new(
            move |_: &mut _, _: &mut _, _: &mut State, _: &mut _| Ok(cmplog),
            tuple_list!(super::cmplog::InputToStateStage::new(target.clone())),
        ),
        // Only for inputs with a harness's buffer, and only with tokens, so
        // a campaign without them draws the same random numbers as before.
        IfStage::new(
            |_: &mut _, _: &mut _, state: &mut State, _: &mut _| Ok(has_buffer(state)),
            tuple_list!(StdMutationalStage::new(BufferHavoc::new(
                HavocScheduledMutator::new(havoc_mutations().merge(tokens_mutations()))
            ))),
        ),
        // Only with tokens, so a campaign without them draws the same
        // random numbers as before.
        IfStage::new(
            |_: &mut _, _: &mut _, state: &mut State, _: &mut _| Ok(state.has_metadata::<Tokens>()),
            tuple_list!(StdMutationalStage::new(CapBuffer::new(
                HavocScheduledMutator::new(tokens_mutations())
            ))),
        ),
        FindingStage::new(
            target.clone(),
            options,
            progress.clone(),
            started,
            executions_before
        ),
        SaveStage::new(
            options,
            campaign_file,
            progress.clone(),
            executions_before,
            *state.executions()
        ),
    );

    loop {
        let done = progress
            .borrow()
            .spent(options, *state.executions(), started.elapsed());
        if done {
            break;
        }
        if let Err(e) = fuzzer.fuzz_one(&mut stages, &mut executor, &mut state, mgr) {
            // A stage's own error (a finding that cannot be written) first.
            let error = progress.borrow_mut().error.take();
            return Err(error.unwrap_or_else(|| StoreError::libafl(e)));
        }
    }
    // Solutions no stage has seen yet: a seed that failed when the budget
    // was spent by seeding (`--runs 1`), or one that crashed a life of this
    // client before.
    let mut last = FindingStage::new(
        target.clone(),
        options,
        progress.clone(),
        started,
        executions_before,
    );
    if let Err(e) = last.drain(&mut state) {
        let error = progress.borrow_mut().error.take();
        return Err(error.unwrap_or_else(|| StoreError::libafl(e)));
    }
    let saved = progress.borrow().saved_corpus;
    store::save_corpus(&state, saved, &options.corpus_dir)?;
    let campaign = state
        .metadata::<CampaignMeta>()
        .map_err(StoreError::libafl)?
        .campaign
        .clone();
    store::save_campaign(&campaign, campaign_file)?;
    // The last point of the series, however short the campaign.
    let rate = *state.executions() as f64 / started.elapsed().as_secs_f64().max(1e-9);
    progress.borrow_mut().known = store::known_findings(&options.findings_dir)?;
    progress.borrow_mut().record(
        &state,
        &campaign,
        executions_before + *state.executions(),
        rate,
        campaign_file,
    )?;
    let mut findings = std::mem::take(&mut progress.borrow_mut().findings);
    // Findings made by earlier lives of this client (before a restart) too.
    if let Ok(at_start) = state.metadata::<FindingsAtStart>() {
        let reported: BTreeSet<PathBuf> = findings.iter().map(|f| f.path.clone()).collect();
        for name in store::known_findings(&options.findings_dir)?.difference(&at_start.names) {
            let path = options.findings_dir.join(name);
            if !reported.contains(&path)
                && let Some(summary) = finding::read_summary(&path)
            {
                findings.push(summary);
            }
        }
    }
    Ok(Summary {
        executions: *state.executions(),
        seconds: started.elapsed().as_secs_f64(),
        corpus: state.corpus().count(),
        edges: crate::explore::monitor::covered(&state),
        findings,
        campaign,
        unconfirmed: progress.borrow().unconfirmed,
    })
}

/// The campaign's tokens: its own and its dictionary's (`None`: none).
fn tokens(options: &Options) -> Result<Option<Tokens>, StoreError> {
    let mut tokens = Tokens::new();
    for token in &options.tokens {
        tokens.add_token(token);
    }
    if let Some(path) = &options.dict {
        let bad = |why: String| StoreError::BadInput {
            path: path.clone(),
            why,
        };
        let text = std::fs::read(path).map_err(|source| StoreError::Unreadable {
            path: path.clone(),
            source,
        })?;
        // LibAFL's reader panics on a line that is not UTF-8; AFL and
        // libFuzzer dictionaries write other bytes as \xNN.
        std::str::from_utf8(&text).map_err(|e| bad(format!("not a dictionary: {e}")))?;
        let read = Tokens::from_file(path).map_err(|e| bad(format!("not a dictionary: {e}")))?;
        for token in read.tokens() {
            tokens.add_token(token);
        }
    }
    Ok((!tokens.is_empty()).then_some(tokens))
}
