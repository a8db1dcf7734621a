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
use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use dst::catalog::SiteInfo;
use dst_kernel::Campaign;
use libafl::HasMetadata;
use libafl::corpus::{Corpus, InMemoryCorpus};
use libafl::events::{
    AwaitRestartSafe, Event, EventFirer, EventReceiver, EventRestarter, EventWithStats,
    HasEventManagerId, ProgressReporter, SendExiting, SimpleEventManager,
};
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
    self, CampaignMeta, FindingObjective, FindingsAtStart, PropertyFeedback, PropertyObserver,
    SeenSignatures, SolutionSignature, SpansFeedback,
};
use crate::findings::{self, FindingSummary};
use crate::mutators::{ChangeDecision, SpliceDecisions, ZeroDecisions};
use crate::store::{self, StoreError};
use crate::subject::{Dyn, Subject};

/// Random-tail inputs the explorer starts from, beside the nominal run.
pub const RANDOM_SEEDS: u64 = 8;
/// As many, for a target whose nominal run has controlled threads.
pub const RANDOM_SEEDS_THREADS: u64 = 32;

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
    /// How a finding is reproduced (written into finding.json); `None`
    /// for this binary's own `replay` and `run` commands.
    pub reproduce: Option<serde_json::Value>,
}

/// The per-run time limit unless one is given (`--timeout-ms`).
pub const DEFAULT_TIMEOUT_MS: u64 = 1000;
/// Runs the shrinker may spend per finding unless told (`--shrink-budget`).
pub const DEFAULT_SHRINK_BUDGET: u64 = 20_000;

impl Options {
    /// A campaign named `name` keeping its corpus, findings and campaign
    /// file in `dir` (`corpus/`, `findings/`, `campaign.json`), with the
    /// defaults of the command line: no budget (set `runs` or `time`),
    /// explorer seed 0, [`DEFAULT_TIMEOUT_MS`] per run,
    /// [`DEFAULT_SHRINK_BUDGET`], no status lines, exploring on past
    /// findings.
    pub fn new(name: impl Into<String>, dir: &Path) -> Options {
        Options {
            name: name.into(),
            runs: None,
            time: None,
            seed: 0,
            corpus_dir: dir.join("corpus"),
            findings_dir: dir.join("findings"),
            campaign_file: dir.join("campaign.json"),
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            status: false,
            shrink_budget: DEFAULT_SHRINK_BUDGET,
            stop_on_finding: false,
            reproduce: None,
        }
    }
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

/// The LibAFL state of one client.
pub type State =
    StdState<InMemoryCorpus<BytesInput>, BytesInput, StdRand, InMemoryCorpus<BytesInput>>;

/// Runs a campaign on `target` until the budget in `options` is spent, with
/// one client. The client runs under LibAFL's restarting manager: this
/// process forks it, and when the target crashes the process or hangs past
/// the timeout, LibAFL's handlers save the state (the failing input among
/// the solutions) and the client is started again from it. The client prints
/// the results; this process only returns in the client.
pub fn explore<S: Subject>(
    make: impl FnOnce() -> Result<S, StoreError>,
    catalog: &[SiteInfo],
    options: &Options,
) -> Result<Summary, StoreError> {
    use libafl::events::SimpleRestartingEventManager;
    use libafl_bolts::shmem::{ShMemProvider, StdShMemProvider};

    let campaign = saved_campaign(&options.campaign_file, catalog)?;
    store::ensure_dir(&options.corpus_dir)?;
    store::ensure_dir(&options.findings_dir)?;
    store::load_corpus(&options.corpus_dir)?;
    EXIT_CELL.get_or_init(ExitCell::new);
    let mut shmem = StdShMemProvider::new().map_err(StoreError::libafl)?;
    match SimpleRestartingEventManager::launch(NopMonitor::new(), &mut shmem, true) {
        Ok((restored, mgr)) => {
            die_with_parent();
            bind_to_free_core();
            client(
                make()?,
                options,
                restored,
                mgr,
                campaign,
                &options.campaign_file,
            )
        }
        Err(libafl::Error::ShuttingDown) => {
            // The restarter, after the client finished: the client printed
            // the results; pass its exit status on.
            let code = EXIT_CELL.get().and_then(ExitCell::get).unwrap_or_else(|| {
                match store::known_findings(&options.findings_dir) {
                    Ok(findings) if findings.is_empty() => crate::exit::OK,
                    Ok(_) => crate::exit::FINDING,
                    Err(_) => crate::exit::INTERNAL,
                }
            });
            std::process::exit(code);
        }
        Err(e) => Err(StoreError::libafl(e)),
    }
}

/// A word of memory shared with forked children, through which a client
/// tells its restarter the exit status it ended with.
struct ExitCell(*mut i32);

// SAFETY: the cell is a word of shared memory accessed with volatile reads
// and writes by one process at a time (the client writes, then exits; the
// restarter reads after that).
unsafe impl Send for ExitCell {}
// SAFETY: as above.
unsafe impl Sync for ExitCell {}

static EXIT_CELL: std::sync::OnceLock<ExitCell> = std::sync::OnceLock::new();
const EXIT_UNSET: i32 = -1;

impl ExitCell {
    fn new() -> ExitCell {
        // SAFETY: an anonymous shared mapping of one page, checked below.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if page == libc::MAP_FAILED {
            return ExitCell(std::ptr::null_mut());
        }
        let cell = page.cast::<i32>();
        // SAFETY: the page is mapped, aligned and writable.
        unsafe { cell.write_volatile(EXIT_UNSET) };
        ExitCell(cell)
    }

    fn get(&self) -> Option<i32> {
        if self.0.is_null() {
            return None;
        }
        // SAFETY: the page stays mapped for the life of the process.
        let code = unsafe { self.0.read_volatile() };
        (code != EXIT_UNSET).then_some(code)
    }
}

/// Records the exit status of this process for its restarter, if it has one.
pub fn report_exit(code: i32) {
    if let Some(cell) = EXIT_CELL.get()
        && !cell.0.is_null()
    {
        // SAFETY: as in `ExitCell::get`.
        unsafe { cell.0.write_volatile(code) };
    }
}

/// Runs a campaign in this process only: no restarts, so a target that
/// crashes the process or hangs ends it. For benchmarks and embedding.
pub fn explore_here<S: Subject>(subject: S, options: &Options) -> Result<Summary, StoreError> {
    let campaign = saved_campaign(&options.campaign_file, &subject.catalog())?;
    let mgr = SimpleEventManager::new(NopMonitor::new());
    client(
        subject,
        options,
        None,
        mgr,
        campaign,
        &options.campaign_file,
    )
}

/// The campaign saved in `file`, or a new one if there is none or the
/// target's properties changed since.
fn saved_campaign(file: &Path, catalog: &[SiteInfo]) -> Result<Campaign, StoreError> {
    let catalog = catalog.to_vec();
    Ok(match store::load_campaign(file)? {
        Some(saved) if saved.catalog == catalog => saved,
        Some(_) => {
            eprintln!(
                "dst-fuzz: the target's properties changed since {} was saved; starting a new campaign",
                file.display()
            );
            Campaign::new(catalog)
        }
        None => Campaign::new(catalog),
    })
}

/// A client dies with the process that started it (its restarter, or the
/// broker), so that killing the campaign leaves no orphan behind.
fn die_with_parent() {
    // SAFETY: prctl(PR_SET_PDEATHSIG) only sets a signal for this process.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
}

/// Binds this client, and the programs it starts (they inherit it), to one
/// core, as AFL++ does: a core no other process is bound to alone, else the
/// one it runs on. A run's wake-ups then stay on one core, which on virtual
/// machines costs several times less than waking another. `DST_NO_AFFINITY=1`
/// leaves scheduling alone. (With --jobs, LibAFL's launcher binds each
/// client to its own core.)
fn bind_to_free_core() {
    if std::env::var_os("DST_NO_AFFINITY").is_some_and(|v| !v.is_empty() && v != "0") {
        return;
    }
    let me = std::process::id().to_string();
    let mut taken = BTreeSet::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !name.bytes().all(|b| b.is_ascii_digit()) || name == me {
                continue;
            }
            let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
                continue;
            };
            let cpus = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(str::trim);
            if let Some(cpu) = cpus.and_then(|c| c.parse::<usize>().ok()) {
                taken.insert(cpu);
            }
        }
    }
    // SAFETY: sysconf and sched_getcpu only read.
    let (online, current) = unsafe {
        (
            libc::sysconf(libc::_SC_NPROCESSORS_ONLN).max(1) as usize,
            libc::sched_getcpu(),
        )
    };
    let cpu = (0..online)
        .find(|c| !taken.contains(c))
        .unwrap_or(current.max(0) as usize);
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET stays within it for
    // cpu < online <= CPU_SETSIZE; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// What a client needs of its LibAFL event manager (the simple one for a
/// single client, the LLMP restarting one under the launcher).
pub trait ClientManager:
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

/// One client's campaign: build the fuzzer around `target`, seed it, fuzz
/// until the budget is spent, and save corpus, findings and campaign (to
/// `campaign_file`) along the way. `restored` is the state a restarting
/// event manager hands back after a crash of this client.
pub fn client<S, EM>(
    subject: S,
    options: &Options,
    restored: Option<State>,
    mut mgr: EM,
    campaign: Campaign,
    campaign_file: &Path,
) -> Result<Summary, StoreError>
where
    S: Subject,
    EM: ClientManager,
{
    let result = client_inner(
        subject,
        options,
        restored,
        &mut mgr,
        campaign,
        campaign_file,
    );
    // Finished or failed, this client is not to be restarted.
    mgr.send_exiting().map_err(StoreError::libafl)?;
    result
}

fn client_inner<S, EM>(
    subject: S,
    options: &Options,
    restored: Option<State>,
    mgr: &mut EM,
    campaign: Campaign,
    campaign_file: &Path,
) -> Result<Summary, StoreError>
where
    S: Subject,
    EM: ClientManager,
{
    let started = Instant::now();
    let exec = Rc::new(RefCell::new(subject));
    let catalog = exec.borrow().catalog();
    // SAFETY: `exec` owns the region and outlives the guard, which is
    // declared after it (so dropped before it) in this function.
    let _region = unsafe { feedback::set_region(exec.borrow().view()) };
    let executions_before = campaign.executions;
    store::ensure_dir(&options.corpus_dir)?;
    store::ensure_dir(&options.findings_dir)?;
    let mut known_findings = store::known_findings(&options.findings_dir)?;

    let (edges_ptr, edges_len) = exec.borrow().edges();
    // SAFETY: the counters live in the binary's static memory (or a static
    // fallback), or in the subject's region, which lives until the end of
    // this function, after the observer is dropped.
    let edges = HitcountsMapObserver::new(unsafe {
        StdMapObserver::from_mut_ptr("edges", edges_ptr, edges_len)
    });
    let (decisions_ptr, decisions_len) = exec.borrow().decisions();
    // SAFETY: the map is owned by `exec`, which lives until the end of this
    // function, after the observer is dropped.
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
            state.add_metadata(FindingsAtStart {
                names: known_findings.clone(),
            });
            state
        }
    };
    let mut fuzzer = StdFuzzer::new(QueueScheduler::new(), feedback, objective);

    let harness_exec = exec.clone();
    let mut harness = move |input: &BytesInput| {
        let (crash, timed_out) = harness_exec.borrow_mut().execute(input.as_ref());
        let kind = if timed_out {
            ExitKind::Timeout
        } else if crash.is_some() {
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
        .timeout(exec.borrow().harness_timeout(options.timeout))
        .fuzzer(&mut fuzzer)
        .state(&mut state)
        .event_mgr(mgr)
        .build()
        .map_err(StoreError::libafl)?;

    if state.corpus().count() == 0 {
        // Seeds: the saved corpus, the nominal run, and random tails: more
        // of them when the nominal run has controlled threads (it took a
        // strategy decision), each then a random schedule of a random
        // strategy (direct, PCT, POS) for mutation to start from.
        let mut seeds = store::load_corpus(&options.corpus_dir)?;
        seeds.push(Vec::new());
        for seed in &seeds {
            fuzzer
                .evaluate_input(
                    &mut state,
                    &mut executor,
                    mgr,
                    &BytesInput::new(seed.clone()),
                )
                .map_err(StoreError::libafl)?;
        }
        let threads = exec
            .borrow()
            .view()
            .decisions()
            .iter()
            .any(|d| d.kind == dst::decision::Kind::Strategy as u8);
        let tails = if threads {
            RANDOM_SEEDS_THREADS
        } else {
            RANDOM_SEEDS
        };
        for i in 1..=tails {
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
    let mut last_status_execs = *state.executions();
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
            .fuzz_one(&mut stages, &mut executor, &mut state, mgr)
            .map_err(StoreError::libafl)?;

        while processed_solutions < state.solutions().count() {
            let id = state.solutions().nth(processed_solutions);
            processed_solutions += 1;
            let input = state
                .solutions()
                .cloned_input_for_id(id)
                .map_err(StoreError::libafl)?
                .into_inner();
            let (signature, seen_at) = state
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
            let found = findings::Found {
                executions: executions_before + seen_at,
                seconds: started.elapsed().as_secs_f64(),
            };
            let mut processed = Ok(findings::Processed::Known);
            let expected = signature
                .as_ref()
                .filter(|s| !feedback::is_process_death(s));
            exec.borrow_mut()
                .with_replayer(signature.as_ref(), &mut |runner, cap| {
                    processed = findings::process(
                        &mut Dyn(runner),
                        &catalog,
                        &input,
                        expected,
                        found,
                        &options.findings_dir,
                        &mut known_findings,
                        options.shrink_budget.min(cap),
                        options.reproduce.as_ref(),
                    );
                });
            match processed? {
                findings::Processed::New(summary) => {
                    if options.status {
                        eprintln!(
                            "dst-fuzz: finding: {} -> {}",
                            summary.signature,
                            summary.path.display()
                        );
                    }
                    findings.push(summary);
                }
                findings::Processed::Known => {}
                findings::Processed::Unconfirmed => {
                    // Not a finding after all: the next input that fails this
                    // way is a solution again.
                    if let Some(signature) = &signature {
                        state
                            .metadata_mut::<SeenSignatures>()
                            .map_err(StoreError::libafl)?
                            .seen
                            .remove(&SolutionSignature::new(signature).signature);
                    }
                }
            }
        }

        mgr.maybe_report_progress(&mut state, Duration::from_secs(1))
            .map_err(StoreError::libafl)?;
        if last_status.elapsed() >= Duration::from_secs(1) {
            let executions = *state.executions();
            saved_corpus = store::save_corpus(&state, saved_corpus, &options.corpus_dir)?;
            known_findings = store::known_findings(&options.findings_dir)?;
            let campaign = &state
                .metadata::<CampaignMeta>()
                .map_err(StoreError::libafl)?
                .campaign;
            store::save_campaign(campaign, campaign_file)?;
            let edges = coverage::covered(&state);
            let stats = crate::monitor::user_stats(campaign, edges, known_findings.len());
            mgr.fire(
                &mut state,
                EventWithStats::with_current_time(
                    Event::UpdateUserStatsMap {
                        stats,
                        phantom: PhantomData,
                    },
                    executions,
                ),
            )
            .map_err(StoreError::libafl)?;
            if options.status {
                let campaign = &state
                    .metadata::<CampaignMeta>()
                    .map_err(StoreError::libafl)?
                    .campaign;
                let rate =
                    (executions - last_status_execs) as f64 / last_status.elapsed().as_secs_f64();
                eprintln!(
                    "{}",
                    status_line(
                        executions_before + executions,
                        rate,
                        state.corpus().count(),
                        edges,
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
    store::save_campaign(&campaign, campaign_file)?;
    // Findings made by earlier lives of this client (before a restart) too.
    if let Ok(at_start) = state.metadata::<FindingsAtStart>() {
        let reported: BTreeSet<PathBuf> = findings.iter().map(|f| f.path.clone()).collect();
        for name in store::known_findings(&options.findings_dir)?.difference(&at_start.names) {
            let path = options.findings_dir.join(name);
            if !reported.contains(&path)
                && let Some(summary) = findings::read_summary(&path)
            {
                findings.push(summary);
            }
        }
    }
    let summary = Summary {
        executions: *state.executions(),
        seconds: started.elapsed().as_secs_f64(),
        corpus: state.corpus().count(),
        edges: coverage::covered(&state),
        findings,
        campaign,
    };
    Ok(summary)
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

/// The campaign file of client `id` in a parallel campaign.
fn part_path(campaign_file: &Path, id: usize) -> PathBuf {
    let mut name = campaign_file.as_os_str().to_owned();
    name.push(format!(".client{id}"));
    PathBuf::from(name)
}

/// Folds the client parts left beside `campaign_file` into it (and removes
/// them); returns the merged campaign.
fn merge_parts(
    campaign_file: &Path,
    catalog: &[dst::catalog::SiteInfo],
) -> Result<Campaign, StoreError> {
    let mut campaign = match store::load_campaign(campaign_file)? {
        Some(saved) if saved.catalog == catalog => saved,
        _ => Campaign::new(catalog.to_vec()),
    };
    let dir = campaign_file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let prefix = format!(
        "{}.client",
        campaign_file
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default()
    );
    let mut parts = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.filter_map(|e| e.ok()) {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                parts.push(entry.path());
            }
        }
    }
    parts.sort();
    for part in &parts {
        if let Some(other) = store::load_campaign(part)?
            && other.catalog == catalog
        {
            campaign.merge(&other);
        }
    }
    store::save_campaign(&campaign, campaign_file)?;
    for part in parts {
        let _ = std::fs::remove_file(part);
    }
    Ok(campaign)
}

/// A free TCP port on loopback for the LLMP broker.
fn free_port() -> Result<u16, StoreError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| StoreError::Libafl(format!("no free port for the broker: {e}")))
}

/// Runs a campaign with `jobs` clients through LibAFL's launcher: one
/// broker (this process, which prints the status) and one forked, restarting
/// client per job, sharing new inputs over LLMP. Each client saves its own
/// part of the campaign; the parts are merged at the end.
pub fn explore_parallel<S: Subject>(
    make: impl FnOnce() -> Result<S, StoreError>,
    catalog: &[SiteInfo],
    options: &Options,
    jobs: usize,
) -> Result<Summary, StoreError> {
    use libafl::events::{ClientDescription, EventConfig, launcher::Launcher};
    use libafl_bolts::core_affinity::{Cores, get_core_ids};
    use libafl_bolts::shmem::{ShMemProvider, StdShMemProvider};
    use std::sync::{Arc, Mutex};

    let started = Instant::now();
    let catalog = catalog.to_vec();
    let executions_before = merge_parts(&options.campaign_file, &catalog)?.executions;
    store::ensure_dir(&options.corpus_dir)?;
    store::ensure_dir(&options.findings_dir)?;
    let findings_before = store::known_findings(&options.findings_dir)?;
    let available = get_core_ids().map_or(1, |ids| ids.len()).max(1);
    let clients = jobs.clamp(1, available);
    if clients < jobs {
        eprintln!(
            "dst-fuzz: --jobs {jobs} exceeds the {available} cores; running {clients} clients"
        );
    }
    let cores = Cores::from((0..clients).collect::<Vec<usize>>());
    let totals = Arc::new(Mutex::new(crate::monitor::Totals::default()));
    let monitor = crate::monitor::StatusMonitor::new(options.status, totals.clone());
    let port = free_port()?;
    let main_pid = std::process::id();
    let shmem = StdShMemProvider::new().map_err(StoreError::libafl)?;
    let client_options = options.clone();
    let client_catalog = catalog.clone();
    let run_client = move |state: Option<State>, mgr, description: ClientDescription| {
        let mut options = client_options;
        // The broker prints the status of all clients.
        options.status = false;
        options.seed = options
            .seed
            .wrapping_add((description.id() as u64).wrapping_mul(0x9E37_79B9));
        let part = part_path(&options.campaign_file, description.id());
        let campaign = Campaign::new(client_catalog);
        die_with_parent();
        let subject = make().map_err(|e| libafl::Error::unknown(e.to_string()))?;
        client(subject, &options, state, mgr, campaign, &part)
            .map(|_| ())
            .map_err(|e| libafl::Error::unknown(e.to_string()))
    };
    let result = Launcher::builder()
        .shmem_provider(shmem)
        .configuration(EventConfig::AlwaysUnique)
        .monitor(monitor)
        .run_client(run_client)
        .cores(&cores)
        .broker_port(port)
        .build()
        .launch::<BytesInput, State>();
    if std::process::id() != main_pid {
        // A client or its restarter: its work is saved; leave quietly.
        let code = match &result {
            Ok(()) | Err(libafl::Error::ShuttingDown) => 0,
            Err(e) => {
                eprintln!("dst-fuzz: client error: {e}");
                crate::exit::INTERNAL
            }
        };
        std::process::exit(code);
    }
    match result {
        Ok(()) | Err(libafl::Error::ShuttingDown) => {}
        Err(e) => return Err(StoreError::libafl(e)),
    }
    let campaign = merge_parts(&options.campaign_file, &catalog)?;
    let totals = *totals.lock().unwrap_or_else(|p| p.into_inner());
    let findings = store::known_findings(&options.findings_dir)?
        .difference(&findings_before)
        .filter_map(|name| findings::read_summary(&options.findings_dir.join(name)))
        .collect();
    Ok(Summary {
        executions: campaign.executions - executions_before,
        seconds: started.elapsed().as_secs_f64(),
        corpus: store::load_corpus(&options.corpus_dir)?.len(),
        edges: totals.edges as usize,
        findings,
        campaign,
    })
}
