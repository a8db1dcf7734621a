//! The explorer: LibAFL wired to a dst target at any level.
//!
//! A campaign runs one client in this process ([`explore_here`]), one
//! restarting client ([`explore`]: LibAFL forks it and starts it again from
//! its saved state when the target kills it) or several on several cores
//! ([`explore_parallel`]). The parts:
//! - `client`: one client's LibAFL fuzzer. Its harness runs the target
//!   through the kernel's [`Executor`]; observers: the executor's edge and
//!   decision maps (their counts bucketed by the harness) and the property
//!   observer (`crate::explore::feedback`); feedbacks: new edges, new decision
//!   values, property novelty; objective: a new failure signature. Stages:
//!   chained havoc and the decision-aware mutators (`chain`), then `stages`.
//! - `stages`: turning new solutions into findings (the kernel's
//!   [`dst_kernel::finding`] pipeline), and once a second saving the corpus
//!   and campaign and printing the status line.
//! - `restart`: the client's process: its exit status for the restarter,
//!   its parent, its core.
//! - `parallel`: the launcher, the broker and merging campaign parts.
//! - `net`: what the broker adds to LLMP to link nodes on several machines
//!   (`--listen`, `--join`).
//! - `chain`: chained havoc, the mutational stage of decision streams (each
//!   execution one step deeper than the last); a harness's buffer gets
//!   LibAFL's stacked havoc (`DST_HAVOC=stacked|chained`: one everywhere).
//! - `schedule`: the corpus scheduler (LibAFL's queue; its weighted one
//!   with `DST_SCHEDULER`, for comparisons).

mod chain;
mod client;
mod cmplog;
pub(crate) mod feedback;
pub(crate) mod monitor;
pub(crate) mod mutators;
mod net;
mod parallel;
mod restart;
mod schedule;
mod stages;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The LibAFL state of one client.
pub(crate) type State = libafl::state::StdState<
    libafl::corpus::InMemoryCorpus<libafl::inputs::BytesInput>,
    libafl::inputs::BytesInput,
    libafl_bolts::rands::StdRand,
    libafl::corpus::InMemoryCorpus<libafl::inputs::BytesInput>,
>;

/// A stage LibAFL may always run again after a restart: it keeps no
/// progress of its own.
macro_rules! always_restartable {
    ($stage:ty $(, for <$($generic:ident),*>)?) => {
        impl$(<$($generic),*>)? libafl::stages::Restartable<$crate::explore::State>
            for $stage
        {
            fn should_restart(
                &mut self,
                _state: &mut $crate::explore::State,
            ) -> Result<bool, libafl::Error> {
                Ok(true)
            }

            fn clear_progress(
                &mut self,
                _state: &mut $crate::explore::State,
            ) -> Result<(), libafl::Error> {
                Ok(())
            }
        }
    };
}
pub(crate) use always_restartable;

use dst::catalog::SiteInfo;
use dst_kernel::finding::FindingSummary;
use dst_kernel::{Campaign, Executor};
use libafl::events::SimpleEventManager;
use libafl::monitors::NopMonitor;

use crate::store::{self, StoreError};
use client::client;
pub use net::Net;
pub use parallel::explore_parallel;
pub use restart::report_exit;

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
    /// Tokens for LibAFL's token mutators (a harness's own strings).
    pub tokens: Vec<Vec<u8>>,
    /// A dictionary file in AFL's and libFuzzer's format (`name="value"`
    /// lines, `\xNN` escapes), read when the campaign starts.
    pub dict: Option<PathBuf>,
    /// Input-to-state mutations from the comparisons a target logs
    /// (`dst::cmplog`; targets that log none are not affected).
    pub cmplog: bool,
    /// Part of a campaign across machines (`--listen`, `--join`).
    pub net: Option<Net>,
    /// Inputs tried after the corpus folder's when the campaign starts,
    /// each kept (and written into the corpus folder) only if it adds
    /// coverage, as the folder's own are not.
    pub seeds: Vec<Vec<u8>>,
    /// Stop at the first failure that does not come back when its input
    /// is replayed (a target that keeps state between runs).
    pub stop_on_unconfirmed: bool,
    /// libFuzzer's `-len_control`: a harness's buffer grows by the log2 of
    /// its cap after this many runs per log2 without a new corpus entry
    /// (the mutators' `LengthControl`); 0: any length up to `max_len` at
    /// once.
    pub len_control: u64,
}

/// The per-run time limit unless one is given (`--timeout-ms`).
pub const DEFAULT_TIMEOUT_MS: u64 = 1000;
/// `-len_control` unless given: ten times libFuzzer's 100, since dst's
/// corpus takes a new entry about a fifth as often as libFuzzer's (it
/// keeps an input for a new edge or hit-count class, libFuzzer for any new
/// feature): libxml2's harness in 60 s, seeds 1 and 2, made 1.1M runs and
/// 4,061-4,096 edges with 100, its inputs grown to 400 bytes on average;
/// 1.9-2.0M runs and 4,156-4,163 edges with 1000, at 44-47 bytes
/// (libFuzzer's own inputs: 84 bytes at most after 60 s).
pub const DEFAULT_LEN_CONTROL: u64 = 1000;
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
            tokens: Vec::new(),
            dict: None,
            cmplog: true,
            net: None,
            seeds: Vec::new(),
            stop_on_unconfirmed: false,
            len_control: DEFAULT_LEN_CONTROL,
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
    /// Failures not reported because they did not come back on replay.
    pub unconfirmed: usize,
}

/// Runs a campaign on `target` until the budget in `options` is spent, with
/// one client. The client runs under LibAFL's restarting manager: this
/// process forks it, and when the target crashes the process or hangs past
/// the timeout, LibAFL's handlers save the state (the failing input among
/// the solutions) and the client is started again from it. The client prints
/// the results; this process only returns in the client.
pub fn explore<E: Executor + 'static>(
    make: impl FnOnce() -> Result<E, StoreError>,
    catalog: &[SiteInfo],
    options: &Options,
) -> Result<Summary, StoreError> {
    use libafl::events::SimpleRestartingEventManager;
    use libafl_bolts::shmem::{ShMemProvider, StdShMemProvider};

    let campaign = saved_campaign(&options.campaign_file, catalog)?;
    store::ensure_dir(&options.corpus_dir)?;
    store::ensure_dir(&options.findings_dir)?;
    store::load_corpus(&options.corpus_dir)?;
    restart::EXIT_CELL.get_or_init(restart::ExitCell::new);
    let mut shmem = StdShMemProvider::new().map_err(StoreError::libafl)?;
    match SimpleRestartingEventManager::launch(NopMonitor::new(), &mut shmem, true) {
        Ok((restored, mgr)) => {
            restart::die_with_parent();
            restart::bind_to_free_core();
            client(
                Box::new(make()?),
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
            let code = restart::EXIT_CELL
                .get()
                .and_then(restart::ExitCell::get)
                .unwrap_or_else(|| match store::known_findings(&options.findings_dir) {
                    Ok(findings) if findings.is_empty() => crate::exit::OK,
                    Ok(_) => crate::exit::FINDING,
                    Err(_) => crate::exit::INTERNAL,
                });
            std::process::exit(code);
        }
        Err(e) => Err(StoreError::libafl(e)),
    }
}

/// Runs a campaign in this process only: no restarts, so a target that
/// crashes the process or hangs ends it. For benchmarks and embedding.
pub fn explore_here<E: Executor + 'static>(
    exec: E,
    options: &Options,
) -> Result<Summary, StoreError> {
    let campaign = saved_campaign(&options.campaign_file, exec.catalog())?;
    let mgr = SimpleEventManager::new(NopMonitor::new());
    client(
        Box::new(exec),
        options,
        None,
        mgr,
        campaign,
        &options.campaign_file,
    )
}

/// The campaign saved in `file`, or a new one if there is none or the
/// target's properties changed since.
pub(crate) fn saved_campaign(file: &Path, catalog: &[SiteInfo]) -> Result<Campaign, StoreError> {
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
