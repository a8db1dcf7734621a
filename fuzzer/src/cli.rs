//! The command line of a target binary: `fuzz`, `replay`, `minimize`,
//! `report`, `catalog`. `cargo dst-fuzz` builds the target and calls these;
//! they also work on the binary directly.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use dst_executors::{Executor, Forking};
use dst_kernel::{Campaign, Determinism, Outcome, check_determinism, shrink};
use serde_json::json;

use crate::args::{CampaignArgs, MinimizeArgs, ReplayArgs};
use crate::explore::{Options, explore, explore_parallel};
use crate::store::{self, StoreError};
use crate::{exit, report};
use dst_executors::InProcess;
use dst_kernel::finding::{self, describe, explain, schedule, traced_run};

#[derive(Parser)]
#[command(about = "A dst target: explore it, replay, minimize and report its runs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Explore the target: search for runs that break its properties.
    Fuzz(FuzzArgs),
    /// A CI job (see `cargo dst-fuzz ci`).
    Ci {
        #[command(flatten)]
        fuzz: FuzzArgs,
        #[command(flatten)]
        ci: crate::ci::CiArgs,
    },
    /// Run the target once in the SDK's local mode, as a plain program:
    /// decisions from DST_SEED or DST_INPUT, failures on stderr, DST_OUTPUT
    /// and DST_TRACE as usual. For replaying a finding under gdb or rr:
    /// `DST_INPUT=findings/NAME/SIG/input gdb --args ./NAME run`.
    Run,
    /// Run one input and explain it: outcome, then every decision in order.
    /// Each run happens in a forked child, so a crash or hang is reported.
    Replay {
        file: PathBuf,
        #[command(flatten)]
        replay: ReplayArgs,
    },
    /// Shrink a failing input to a shortlex-minimal one with the same failure
    /// (runs in forked children).
    Minimize {
        file: PathBuf,
        #[command(flatten)]
        minimize: MinimizeArgs,
    },
    /// Print the property table of the campaign.
    Report {
        #[arg(long)]
        json: bool,
        #[arg(long)]
        campaign: Option<PathBuf>,
        /// Also write the report as one self-contained HTML page.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// The campaign's findings folder (for --html).
        #[arg(long)]
        findings: Option<PathBuf>,
    },
    /// List every assertion and fault site of the binary.
    Catalog {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct FuzzArgs {
    #[command(flatten)]
    campaign_args: CampaignArgs,
    /// The corpus folder (default: fuzz/corpus/NAME).
    #[arg(long)]
    corpus: Option<PathBuf>,
    /// The findings folder (default: fuzz/findings/NAME).
    #[arg(long)]
    findings: Option<PathBuf>,
    /// The campaign file (default: fuzz/campaigns/NAME.json).
    #[arg(long)]
    campaign: Option<PathBuf>,
}

fn target_name() -> String {
    std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().to_string()))
        .unwrap_or_else(|| "target".to_string())
}

fn default_campaign(name: &str) -> PathBuf {
    Path::new("fuzz")
        .join("campaigns")
        .join(format!("{name}.json"))
}

/// A target closure, boxed: the explorer (all of LibAFL's generic code) is
/// compiled once, in this crate, and not in the user's instrumented crate,
/// where it would count as the target's own coverage.
pub type Target = Box<dyn FnMut() + 'static>;

/// Runs the command line; returns the exit status.
pub fn run(target: Target) -> i32 {
    let cli: Cli = match crate::args::parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let name = target_name();
    let result = match cli.command {
        Command::Fuzz(args) => fuzz(target, &name, args),
        Command::Ci { mut fuzz, ci } => {
            if fuzz.campaign_args.runs.is_none() && fuzz.campaign_args.time.is_none() {
                fuzz.campaign_args.time = Some(crate::ci::DEFAULT_TIME);
            }
            let options = fuzz_options(&name, &fuzz);
            let json = fuzz.campaign_args.json;
            crate::ci::code_change(
                InProcess::new(target),
                |exec| move || Ok(exec),
                &dst::catalog::sites(),
                &options,
                &ci,
                json,
            )
        }
        Command::Replay { file, replay: args } => replay(target, &file, args.json, args.timeout()),
        Command::Minimize {
            file,
            minimize: args,
        } => {
            let timeout = args.timeout();
            minimize(target, &file, args.out, args.budget, timeout)
        }
        Command::Report {
            json,
            campaign,
            html,
            findings,
        } => {
            let findings =
                findings.unwrap_or_else(|| Path::new("fuzz").join("findings").join(&name));
            report_command(
                &campaign.unwrap_or_else(|| default_campaign(&name)),
                &dst::catalog::sites(),
                json,
                html.as_deref().map(|page| (page, findings.as_path())),
            )
        }
        Command::Run => {
            let mut target = target;
            let result = dst::thread::run_body(&mut target);
            if let Err(payload) = result {
                std::panic::resume_unwind(payload);
            }
            Ok(match dst::runtime::first_failure() {
                Some(message) => {
                    eprintln!("dst: the run broke \"{message}\"");
                    exit::FINDING
                }
                None => exit::OK,
            })
        }
        Command::Catalog { json } => {
            catalog(json);
            Ok(exit::OK)
        }
    };
    let code = result.unwrap_or_else(|err| {
        eprintln!("dst-fuzz: {err}");
        err.exit_code()
    });
    crate::explore::report_exit(code);
    code
}

/// The campaign options of `args` for the target `name`.
fn fuzz_options(name: &str, args: &FuzzArgs) -> Options {
    args.campaign_args.options(
        name,
        args.corpus
            .clone()
            .unwrap_or_else(|| Path::new("fuzz").join("corpus").join(name)),
        args.findings
            .clone()
            .unwrap_or_else(|| Path::new("fuzz").join("findings").join(name)),
        args.campaign
            .clone()
            .unwrap_or_else(|| default_campaign(name)),
    )
}

fn fuzz(target: Target, name: &str, args: FuzzArgs) -> Result<i32, StoreError> {
    let options = fuzz_options(name, &args);
    let campaign_args = args.campaign_args;
    if !dst_executors::edges::instrumented() && !campaign_args.quiet {
        eprintln!(
            "dst-fuzz: this binary has no edge coverage (build it with `cargo dst-fuzz run`); guided by decisions and properties only"
        );
    }
    let make = move || Ok(InProcess::new(target));
    let output = Output {
        json: campaign_args.json,
        quiet: campaign_args.quiet,
    };
    campaign(
        make,
        &dst::catalog::sites(),
        &options,
        campaign_args.jobs,
        output,
    )
}

/// What a campaign prints at its end.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// One JSON object on stdout.
    pub json: bool,
    /// No summary on stderr.
    pub quiet: bool,
}

/// Runs a campaign on the subject `make` builds (in each client), prints
/// its summary, and returns the exit status: [`exit::FINDING`] when the
/// findings folder holds any finding.
pub fn campaign<E: Executor + 'static>(
    make: impl FnOnce() -> Result<E, StoreError>,
    catalog: &[dst::catalog::SiteInfo],
    options: &Options,
    jobs: usize,
    output: Output,
) -> Result<i32, StoreError> {
    if options.runs.is_none() && options.time.is_none() {
        eprintln!("dst-fuzz: no --runs or --time given: exploring until interrupted");
    }
    let summary = if jobs > 1 || options.net.is_some() {
        explore_parallel(make, catalog, options, jobs)?
    } else {
        explore(make, catalog, options)?
    };
    finish(&summary, options, output)
}

/// Runs a campaign with one client on the subject `make` builds, prints
/// its summary, and returns the exit status with the summary.
pub fn campaign_summary<E: Executor + 'static>(
    make: impl FnOnce() -> Result<E, StoreError>,
    catalog: &[dst::catalog::SiteInfo],
    options: &Options,
    output: Output,
) -> Result<(i32, crate::explore::Summary), StoreError> {
    let summary = explore(make, catalog, options)?;
    let code = finish(&summary, options, output)?;
    Ok((code, summary))
}

/// Runs a campaign on `exec` in this process alone (no restarter: for an
/// executor whose runs cannot take this process down), prints its summary
/// and returns the exit status as [`campaign`] does.
pub fn campaign_here<E: Executor + 'static>(
    exec: E,
    options: &Options,
    output: Output,
) -> Result<i32, StoreError> {
    let summary = crate::explore::explore_here(exec, options)?;
    finish(&summary, options, output)
}

/// Prints a finished campaign's summary; returns its exit status.
fn finish(
    summary: &crate::explore::Summary,
    options: &Options,
    output: Output,
) -> Result<i32, StoreError> {
    let name = &options.name;
    let all_findings = store::known_findings(&options.findings_dir)?;
    let rate = summary.executions as f64 / summary.seconds.max(1e-9);
    if !output.quiet {
        eprintln!(
            "dst-fuzz: {} executions in {:.1}s ({rate:.0}/s), corpus {}, edges {}, {} new finding(s), {} in {}",
            summary.executions,
            summary.seconds,
            summary.corpus,
            summary.edges,
            summary.findings.len(),
            all_findings.len(),
            options.findings_dir.display()
        );
        eprint!("{}", report::text(&summary.campaign));
    }
    if output.json {
        let out = json!({
            "target": name,
            "executions": summary.executions,
            "seconds": summary.seconds,
            "exec_per_sec": rate,
            "corpus": summary.corpus,
            "edges": summary.edges,
            "findings": summary.findings,
            "findings_dir": options.findings_dir,
            "properties": report::json(&summary.campaign),
        });
        println!("{out}");
    }
    Ok(if all_findings.is_empty() {
        exit::OK
    } else {
        exit::FINDING
    })
}

fn replay(
    target: Target,
    file: &Path,
    as_json: bool,
    timeout: Duration,
) -> Result<i32, StoreError> {
    let input = store::read_input(file)?;
    replay_with(&mut Forking::new(target, timeout), &input, as_json)
}

/// `replay` over any executor: runs `input` three times, then once traced,
/// and prints the outcome, the determinism verdict and every decision.
pub fn replay_with(
    exec: &mut (impl Executor + ?Sized),
    input: &[u8],
    as_json: bool,
) -> Result<i32, StoreError> {
    let catalog = exec.catalog().to_vec();
    let (_, verdict) = check_determinism(exec, input, 3);
    let record = traced_run(exec, input);
    let decisions = explain(&record);
    let steps = schedule(&record);
    let description = describe(&record, &catalog);
    // What a sandboxed target (wasm) wrote and asked of its system.
    let lifecycle = |wanted: &str| {
        record.events.iter().find_map(|e| match e {
            dst::region::Event::Lifecycle { name, details } if name == wanted => details.clone(),
            _ => None,
        })
    };
    use dst_executors::wasm::{CALLS_EVENT, STDERR_EVENT, STDOUT_EVENT};
    let (stdout, stderr) = (lifecycle(STDOUT_EVENT), lifecycle(STDERR_EVENT));
    let calls = lifecycle(CALLS_EVENT);
    let calls: Option<Vec<(String, i64)>> = calls.and_then(|c| serde_json::from_str(&c).ok());
    if as_json {
        println!(
            "{}",
            json!({
                "outcome": description,
                "signature": record.signature(),
                "determinism": verdict,
                "decision_count": record.decision_count,
                "consumed": record.consumed,
                "decisions": decisions,
                "schedule": steps,
                "stdout": stdout,
                "stderr": stderr,
                "system_calls": calls,
            })
        );
    } else {
        println!(
            "outcome: {}",
            match record.signature() {
                Some(signature) => signature.to_string(),
                None => "pass".to_string(),
            }
        );
        if let Some(location) = description["location"].as_str() {
            println!("at: {location}");
        }
        if let Outcome::Crash { message, .. } = &record.outcome {
            println!("crash: {message}");
        }
        if !description["details"].is_null() {
            println!("details: {}", description["details"]);
        }
        match &verdict {
            Determinism::Stable { runs } => println!("replayed {runs} times: identical"),
            Determinism::Diverged { divergence, .. } => println!(
                "NOT deterministic: {}",
                divergence
                    .as_ref()
                    .map_or("the outcome changed".to_string(), |d| d.to_string())
            ),
        }
        println!(
            "decisions ({} taken, {} stream bytes):",
            record.decision_count, record.consumed
        );
        for line in &decisions {
            println!("  {line}");
        }
        if !steps.is_empty() {
            let preemptions = steps.iter().filter(|s| s.preempts.is_some()).count();
            println!(
                "schedule ({} steps, {preemptions} preemptions):",
                steps.len()
            );
            for line in &steps {
                println!("  {line}");
            }
        }
        if let Some(calls) = &calls {
            let line: Vec<String> = calls.iter().map(|(n, r)| format!("{n}={r}")).collect();
            println!("system calls ({}): {}", calls.len(), line.join(" "));
        }
        for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
            if let Some(text) = text {
                println!("{name}:");
                for line in text.lines() {
                    println!("  | {line}");
                }
            }
        }
    }
    Ok(if record.signature().is_some() {
        exit::FINDING
    } else {
        exit::OK
    })
}

fn minimize(
    target: Target,
    file: &Path,
    out: Option<PathBuf>,
    budget: u64,
    timeout: Duration,
) -> Result<i32, StoreError> {
    minimize_with(&mut Forking::new(target, timeout), file, out, budget)
}

/// `minimize` over any executor.
pub fn minimize_with(
    exec: &mut (impl Executor + ?Sized),
    file: &Path,
    out: Option<PathBuf>,
    budget: u64,
) -> Result<i32, StoreError> {
    let input = store::read_input(file)?;
    let Some(signature) = exec.run(&input).signature() else {
        println!("{} passes: nothing to minimize", file.display());
        return Ok(exit::OK);
    };
    let shrunk = shrink(exec, &input, &signature, budget)
        .expect("a failing input reproduces its own signature");
    let out = out.unwrap_or_else(|| {
        let mut name = file.as_os_str().to_owned();
        name.push(".min");
        PathBuf::from(name)
    });
    store::write(&out, &shrunk.input)?;
    println!(
        "{signature}: {} bytes -> {} bytes in {} runs, written to {}",
        input.len(),
        shrunk.input.len(),
        shrunk.runs,
        out.display()
    );
    Ok(exit::FINDING)
}

/// Prints the property table of a saved campaign (all of `catalog` unfound
/// when there is none yet); [`exit::FINDING`] when a property fails.
pub fn report_command(
    campaign_file: &Path,
    catalog: &[dst::catalog::SiteInfo],
    as_json: bool,
    html: Option<(&Path, &Path)>,
) -> Result<i32, StoreError> {
    let campaign =
        store::load_campaign(campaign_file)?.unwrap_or_else(|| Campaign::new(catalog.to_vec()));
    if let Some((page, findings_dir)) = html {
        let name = campaign_file
            .file_stem()
            .map_or("campaign".into(), |s| s.to_string_lossy().into_owned());
        let doc = report::document(
            &name,
            &campaign,
            findings_dir,
            &crate::stats::dir_for(campaign_file),
        );
        dst_kernel::write_atomic(page, crate::report::html::render(&doc).as_bytes()).map_err(
            |source| StoreError::Unwritable {
                path: page.to_path_buf(),
                source,
            },
        )?;
    }
    if as_json {
        println!(
            "{}",
            json!({ "executions": campaign.executions, "properties": report::json(&campaign) })
        );
    } else {
        print!("{}", report::text(&campaign));
    }
    let failing = campaign
        .properties
        .values()
        .any(|p| p.is_must_hold() && p.status() == dst_kernel::Status::Failing);
    Ok(if failing { exit::FINDING } else { exit::OK })
}

fn catalog(as_json: bool) {
    report::print_catalog(&dst::catalog::sites(), as_json);
}

#[doc(hidden)]
pub use finding::FindingSummary;
