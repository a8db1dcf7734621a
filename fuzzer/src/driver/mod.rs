//! `cargo dst-fuzz`, as a library: the binary only parses its arguments
//! and calls [`main`].
//!
//! - [`build`]: the fuzz crate (targets through `cargo metadata`, built with
//!   sanitizer coverage on the user's crates through the rustc wrapper);
//! - [`cmd`]: `--cmd`, another program explored through the process
//!   executor;
//! - [`init`]: the fuzz crate `init` writes;
//! - here: the command line (sharing [`crate::args`] with target binaries),
//!   and calling a target binary with it.

pub mod build;
pub mod cc;
pub mod cmd;
pub mod init;
pub mod kvm;
pub mod level;
pub mod libfuzzer;
pub mod riscv;
pub mod tokens;
pub mod wasm;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{Args, Parser, Subcommand};

use crate::args::{CampaignArgs, MinimizeArgs, ReplayArgs};
use crate::ci::batch;
use crate::exit;
use build::FuzzCrate;
use cmd::CmdArgs;
use kvm::KvmArgs;
use level::Level;
use riscv::RiscvArgs;
use wasm::WasmArgs;

/// `cargo-dst-fuzz` with `args` (its own name first): as rustc wrapper
/// when cargo calls it so, else the command line. Returns the exit status.
pub fn main(mut args: Vec<OsString>) -> i32 {
    if std::env::var_os("DST_FUZZ_RUSTC_WRAPPER").is_some() && args.len() >= 2 {
        return build::rustc_wrapper(&args[1..]);
    }
    // `cargo dst-fuzz ...` runs `cargo-dst-fuzz dst-fuzz ...`.
    if args.get(1).is_some_and(|a| a == "dst-fuzz") {
        args.remove(1);
    }
    let cli: Cli = match crate::args::parse(args) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let code = match run(cli) {
        Ok(code) => code,
        Err(Failure { code, message }) => {
            eprintln!("cargo dst-fuzz: {message}");
            code
        }
    };
    // In an explorer's client (a campaign the driver ran itself), the
    // restarter passes this status on.
    crate::explore::report_exit(code);
    code
}

#[derive(Parser)]
#[command(
    name = "cargo dst-fuzz",
    bin_name = "cargo dst-fuzz",
    about = "Explore dst targets: find, shrink and replay runs that break their properties"
)]
pub struct Cli {
    /// The fuzz crate's folder (holding its Cargo.toml).
    #[arg(long, global = true, default_value = "fuzz")]
    pub fuzz_dir: PathBuf,
    #[command(subcommand)]
    pub command: Cmd,
}

/// The level a command's target is at, when it is not a target of the
/// fuzz crate: a program (`--cmd`), a wasm module, a riscv program, a KVM
/// guest (each group's own flags; they exclude one another).
#[derive(Args, Debug, Clone)]
pub struct Levels {
    #[command(flatten)]
    pub cmd: CmdArgs,
    #[command(flatten)]
    pub wasm: WasmArgs,
    #[command(flatten)]
    pub riscv: RiscvArgs,
    #[command(flatten)]
    pub kvm: KvmArgs,
}

impl Levels {
    /// The level its flags select, the one path every command takes;
    /// `None` for a target of the fuzz crate (given by name). Two level
    /// flags at once are refused (clap refuses them first; this is the
    /// rule's one statement).
    pub fn selected(&self) -> Result<Option<Box<dyn Level>>, Failure> {
        let mut given: Vec<Box<dyn Level>> = [
            self.cmd.level().map(|l| Box::new(l) as Box<dyn Level>),
            self.wasm
                .level(&self.cmd.command)
                .map(|l| Box::new(l) as Box<dyn Level>),
            self.riscv
                .level(&self.cmd.command)
                .map(|l| Box::new(l) as Box<dyn Level>),
            self.riscv
                .cluster_level()
                .map(|l| Box::new(l) as Box<dyn Level>),
            self.kvm.level().map(|l| Box::new(l) as Box<dyn Level>),
        ]
        .into_iter()
        .flatten()
        .collect();
        if self.kvm.kvm.is_some() && !self.cmd.command.is_empty() {
            return Err(Failure::new(
                exit::USAGE,
                "--kvm takes no arguments after --: a guest has no command line",
            ));
        }
        if self.riscv.cluster.is_some() && !self.cmd.command.is_empty() {
            return Err(Failure::new(
                exit::USAGE,
                "--cluster takes no arguments after --: each node's are in the cluster file",
            ));
        }
        if given.len() > 1 {
            let flags: Vec<&str> = given.iter().map(|l| l.flag()).collect();
            return Err(Failure::new(
                exit::USAGE,
                format!("one level at a time: {} were given", flags.join(" and ")),
            ));
        }
        Ok(given.pop())
    }
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Create a fuzz/ folder with one example target in the crate here.
    Init {
        /// The crate's folder.
        #[arg(long, default_value = ".")]
        path: PathBuf,
        /// Convert this cargo-fuzz crate (a `fuzz/` folder) in place
        /// instead: its libfuzzer-sys dependency, its targets' imports, its
        /// corpus and crash artifacts (the originals are kept in
        /// DIR/cargo-fuzz-backup).
        #[arg(long, value_name = "DIR")]
        from_cargo_fuzz: Option<PathBuf>,
    },
    /// List the targets.
    List,
    /// Build a target with edge coverage.
    Build { name: String },
    /// Explore a target: build it with coverage, then search for runs that
    /// break its properties. With --cmd, explore any program linking libdst
    /// (or the dst crate): `run --cmd -- ./service ARGS`; with --wasm, a
    /// WebAssembly module: `run --wasm module.wasm -- ARGS`.
    Run {
        /// The target (with --cmd: a name for its files, by default the
        /// program's file name).
        name: Option<String>,
        #[command(flatten)]
        args: CampaignArgs,
        #[command(flatten)]
        level: Levels,
    },
    /// A CI job, as ClusterFuzzLite's code-change mode: replay every stored
    /// finding (still failing, or resolved) and corpus entry (a regression
    /// fails fast), then explore for --time (default 60s). Exit 1 only for
    /// a new finding. `--sarif FILE`, `--junit FILE` for CI systems.
    Ci {
        /// The target (with --cmd, --wasm, --riscv, --kvm: a name for its
        /// files, by default the program's).
        name: Option<String>,
        #[command(flatten)]
        args: CampaignArgs,
        #[command(flatten)]
        ci: crate::ci::CiArgs,
        #[command(flatten)]
        level: Levels,
    },
    /// Reproduce and explain a run: `replay NAME FILE`, or
    /// `replay FILE --cmd -- ./service ARGS`.
    Replay {
        /// NAME FILE, or FILE with --cmd.
        #[arg(num_args = 1..=2, required = true)]
        args: Vec<String>,
        #[command(flatten)]
        replay: ReplayArgs,
        #[command(flatten)]
        level: Levels,
    },
    /// Shrink a failing input: `minimize NAME FILE`, or
    /// `minimize FILE --cmd -- ./service ARGS`.
    Minimize {
        /// NAME FILE, or FILE with --cmd.
        #[arg(num_args = 1..=2, required = true)]
        args: Vec<String>,
        #[command(flatten)]
        minimize: MinimizeArgs,
        #[command(flatten)]
        level: Levels,
    },
    /// Print the property table: `report NAME`, or `report --cmd -- ./service`;
    /// `--html FILE` also writes one self-contained page (properties,
    /// findings explained, new and resolved ones, the campaign over time).
    Report {
        name: Option<String>,
        #[arg(long)]
        json: bool,
        /// Also write the report as one self-contained HTML page.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        #[command(flatten)]
        level: Levels,
    },
    /// Check a history of any system for linearizability: Jepsen logs (as
    /// Jepsen's etcd tests write them), EDN events (Porcupine's key-value
    /// histories) or JSON lines (see dst-oracles' `format` module). Exit
    /// status 0 linearizable, 1 not (with the operations that cannot be
    /// linearized together), 4 bad input (with the line at fault), 8 the
    /// budget ran out before a verdict.
    Lincheck {
        /// The sequential specification: register, kv, queue or set.
        #[arg(long)]
        model: dst_oracles::ModelName,
        file: PathBuf,
        /// jepsen, kv (Porcupine's EDN key-value events) or jsonl (default:
        /// told from the content).
        #[arg(long)]
        format: Option<dst_oracles::Format>,
        /// Give up (status 3) after this long (e.g. 10s).
        #[arg(long, value_parser = crate::args::parse_duration)]
        timeout: Option<std::time::Duration>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Build a C program for a level: `cc --riscv -o prog prog.c [more.c
    /// ...] [compiler flags]` makes a static riscv64 Linux program for the
    /// emulator; `cc --kvm -o guest.elf prog.c` a freestanding x86-64
    /// guest for the KVM executor. Each with dst.h and its guest runtime
    /// (dst.h's calls reach the executor as ecalls or hypercalls).
    /// `cc --libfuzzer -o harness harness.c` links a libFuzzer harness with
    /// libdst and its libFuzzer main.
    Cc {
        /// Build for the emulator.
        #[arg(long, conflicts_with = "kvm")]
        riscv: bool,
        /// Build for the KVM executor.
        #[arg(long, conflicts_with = "libfuzzer")]
        kvm: bool,
        /// Build a libFuzzer harness (LLVMFuzzerTestOneInput) with libdst's
        /// main: explored by `run --cmd`, or run by itself as libFuzzer
        /// binaries are (`-runs=N`, corpus directories, crash files).
        #[arg(long, conflicts_with = "riscv")]
        libfuzzer: bool,
        /// The program to write.
        #[arg(short = 'o', value_name = "PROGRAM")]
        output: PathBuf,
        /// Sources, and flags for the compiler.
        #[arg(required = true, num_args = 1.., allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Run a libFuzzer command line on a harness built by `cc --libfuzzer`
    /// (what the harness does when started by itself to fuzz):
    /// `libfuzzer ./harness -max_total_time=60 corpus/`. Inputs kept go into
    /// the first corpus folder, a finding to `crash-<sha1>`; exit status as
    /// libFuzzer's (0, 77 crash, 70 timeout).
    Libfuzzer {
        harness: PathBuf,
        /// libFuzzer flags (-name=value), corpus folders, input files.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Join the parts of a campaign run on several machines (`run --listen`
    /// on one, `--join` on the others) into this one: `merge NAME --from
    /// DIR...`, each DIR another machine's fuzz folder (copied here):
    /// corpora united, new findings copied, campaign counts added (each
    /// part once).
    Merge {
        name: String,
        /// Another machine's fuzz folder (again for more).
        #[arg(long, required = true, value_name = "DIR")]
        from: Vec<PathBuf>,
    },
    /// Print every assertion and fault site of a target: `catalog NAME`, a
    /// level's target (`catalog --riscv prog`), or any binary linking
    /// libdst or wasm module (when NAME is a path to a file: a binary's
    /// read from its dst_catalog section, without running it).
    Catalog {
        name: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        level: Levels,
    },
}

pub use crate::exit::Failure;

/// Runs a parsed command line; returns the exit status or why it failed.
pub fn run(cli: Cli) -> Result<i32, Failure> {
    let fuzz = FuzzCrate {
        dir: cli.fuzz_dir.clone(),
    };
    match cli.command {
        Cmd::Init {
            from_cargo_fuzz: Some(dir),
            ..
        } => init::from_cargo_fuzz(&dir),
        Cmd::Init { path, .. } => init::init(&path),
        Cmd::List => {
            for name in fuzz.targets()? {
                println!("{name}");
            }
            Ok(exit::OK)
        }
        Cmd::Build { name } => fuzz.build(&name).map(|_| exit::OK),
        Cmd::Merge { name, from } => {
            let part = |fuzz: &FuzzCrate| crate::merge::Part {
                corpus: fuzz.corpus(&name),
                findings: fuzz.findings(&name),
                campaign: fuzz.campaign(&name),
            };
            let parts: Vec<_> = from
                .into_iter()
                .map(|dir| part(&FuzzCrate { dir }))
                .collect();
            let merged = crate::merge::merge(&part(&fuzz), &parts).map_err(Failure::from)?;
            eprintln!(
                "dst-fuzz: merged {} part(s) into {name}: {} corpus entries and {} findings added, {} campaign(s) counted ({} merged before)",
                parts.len(),
                merged.corpus_added,
                merged.findings_added,
                merged.campaigns_merged,
                merged.campaigns_skipped
            );
            Ok(exit::OK)
        }
        Cmd::Run { name, args, level } => {
            if let Some(level) = level.selected()? {
                let name = name.unwrap_or_else(|| level.name());
                return campaign(&fuzz, &name, &*level, &args);
            }
            let name = name.ok_or(Failure::new(exit::USAGE, "which target? `run NAME`"))?;
            let binary = fuzz.build(&name)?;
            let mut flags: Vec<OsString> = vec!["fuzz".into()];
            flags.extend(fuzz.paths(&name));
            flags.extend(args.to_args());
            call(&name, &binary, &flags)
        }
        Cmd::Ci {
            name,
            mut args,
            ci,
            level,
        } => {
            if args.runs.is_none() && args.time.is_none() {
                args.time = Some(crate::ci::DEFAULT_TIME);
            }
            let level = level.selected()?;
            if ci.mode == crate::ci::Mode::Batch {
                let targets: Vec<batch::Target> = match &level {
                    Some(level) => level.batch().ok_or_else(|| {
                        Failure::new(exit::USAGE, format!(
                                "ci --mode batch runs every target of the fuzz crate, or each program after --cmd --, not one {} target",
                                level.flag()
                            ),
                        )
                    })?,
                    None if name.is_some() => {
                        return Err(Failure::new(exit::USAGE, "ci --mode batch runs every target of the fuzz crate (no NAME), or each program after --cmd --",
                        ));
                    }
                    None => fuzz
                        .targets()?
                        .iter()
                        .map(|n| batch::Target::of_crate(n))
                        .collect(),
                };
                return batch::run(&fuzz.dir, &targets, &args, &ci);
            }
            if let Some(level) = level {
                let name = name.unwrap_or_else(|| level.name());
                let timeout = std::time::Duration::from_millis(args.timeout_ms);
                let exec = level.executor(timeout)?;
                let catalog = exec.catalog().to_vec();
                let options = level.options(&fuzz, &name, &args);
                let clients = |exec| level.clients(exec, timeout);
                return crate::ci::code_change(exec, clients, &catalog, &options, &ci, args.json)
                    .map_err(Failure::from);
            }
            let name = name.ok_or(Failure::new(exit::USAGE, "which target? `ci NAME`"))?;
            let binary = fuzz.build(&name)?;
            let mut flags: Vec<OsString> = vec!["ci".into()];
            flags.extend(fuzz.paths(&name));
            flags.extend(args.to_args());
            flags.extend(ci.to_args());
            call(&name, &binary, &flags)
        }
        Cmd::Replay {
            args,
            replay,
            level,
        } => {
            let level = level.selected()?;
            let (name, file) = name_and_file(&args, level.as_deref(), "replay")?;
            if let Some(level) = level {
                let mut exec = level.executor(replay.timeout())?;
                let input = crate::store::read_input(&file).map_err(Failure::from)?;
                return crate::cli::replay_with(&mut exec, &input, replay.json)
                    .map_err(Failure::from);
            }
            let binary = fuzz.build(&name)?;
            let mut flags: Vec<OsString> = vec!["replay".into(), file.into()];
            flags.extend(replay.to_args());
            call(&name, &binary, &flags)
        }
        Cmd::Minimize {
            args,
            minimize,
            level,
        } => {
            let level = level.selected()?;
            let (name, file) = name_and_file(&args, level.as_deref(), "minimize")?;
            if let Some(level) = level {
                let mut exec = level.executor(minimize.timeout())?;
                return crate::cli::minimize_with(&mut exec, &file, minimize.out, minimize.budget)
                    .map_err(Failure::from);
            }
            let binary = fuzz.build(&name)?;
            let mut flags: Vec<OsString> = vec!["minimize".into(), file.into()];
            flags.extend(minimize.to_args());
            call(&name, &binary, &flags)
        }
        Cmd::Report {
            name,
            json,
            html,
            level,
        } => {
            if let Some(level) = level.selected()? {
                // The catalog without exploring (a program's from its ELF,
                // without starting it).
                let name = name.unwrap_or_else(|| level.name());
                let catalog = level.catalog()?;
                let dir = fuzz.findings(&name);
                let html = html.as_deref().map(|page| (page, dir.as_path()));
                return crate::cli::report_command(&fuzz.campaign(&name), &catalog, json, html)
                    .map_err(Failure::from);
            }
            let name = name.ok_or(Failure::new(exit::USAGE, "which target? `report NAME`"))?;
            let binary = fuzz.build(&name)?;
            let mut args: Vec<OsString> = vec!["report".into(), "--campaign".into()];
            args.push(fuzz.campaign(&name).into());
            if json {
                args.push("--json".into());
            }
            if let Some(page) = html {
                args.extend(["--html".into(), page.into_os_string(), "--findings".into()]);
                args.push(fuzz.findings(&name).into());
            }
            call(&name, &binary, &args)
        }
        Cmd::Lincheck {
            model,
            file,
            format,
            timeout,
            json,
        } => lincheck(model, &file, format, timeout, json),
        Cmd::Cc {
            riscv,
            kvm,
            libfuzzer,
            output,
            args,
        } => {
            let level = match (riscv, kvm, libfuzzer) {
                (true, _, _) => Some(cc::Level::Riscv),
                (_, true, _) => Some(cc::Level::Kvm),
                (_, _, true) => Some(cc::Level::Libfuzzer),
                _ => None,
            };
            cc::cc(level, &output, &args)
        }
        Cmd::Libfuzzer { harness, args } => libfuzzer::libfuzzer(&harness, &args),
        Cmd::Catalog { name, json, level } => {
            let file = name.as_deref().map(Path::new).filter(|p| p.is_file());
            let sites = match (level.selected()?, file) {
                (Some(level), _) => level.catalog()?,
                // A module's imports need not all be there to list it.
                (None, Some(path)) if wasm::is_module(path) => {
                    let module = WasmArgs {
                        wasm: Some(path.to_path_buf()),
                        fuel: dst_executors::wasm::DEFAULT_FUEL,
                        wasi_missing: wasm::MissingArg::Enosys,
                        env: Vec::new(),
                    };
                    module.level(&[]).expect("--wasm was given").catalog()?
                }
                // Any binary linking libdst: its dst_catalog section,
                // without running it.
                (None, Some(path)) => dst_executors::elf::catalog(path)
                    .map_err(|e| Failure::new(exit::BAD_INPUT, e))?,
                (None, None) => {
                    let name =
                        name.ok_or(Failure::new(exit::USAGE, "which target? `catalog NAME`"))?;
                    let binary = fuzz.build(&name)?;
                    let mut args: Vec<OsString> = vec!["catalog".into()];
                    if json {
                        args.push("--json".into());
                    }
                    return call(&name, &binary, &args);
                }
            };
            crate::report::print_catalog(&sites, json);
            Ok(exit::OK)
        }
    }
}

fn lincheck(
    model: dst_oracles::ModelName,
    file: &Path,
    format: Option<dst_oracles::Format>,
    timeout: Option<std::time::Duration>,
    json: bool,
) -> Result<i32, Failure> {
    let mut options = dst_oracles::CheckOptions::default();
    options.budget.timeout = timeout;
    let report = dst_oracles::lincheck_file_with(model, file, format, &options)
        .map_err(|e| Failure::new(exit::BAD_INPUT, e.to_string()))?;
    if json {
        let text = serde_json::to_string(&report)
            .map_err(|e| Failure::new(exit::INTERNAL, e.to_string()))?;
        println!("{text}");
    } else {
        println!("{report}");
    }
    Ok(match report.verdict {
        dst_oracles::Verdict::Linearizable => exit::OK,
        dst_oracles::Verdict::Violation(_) => exit::FINDING,
        dst_oracles::Verdict::Unknown => exit::INCONCLUSIVE,
    })
}

/// The positional arguments of `replay` and `minimize`: `NAME FILE`, or
/// `FILE` alone with a level (the name is then unused and empty).
fn name_and_file(
    args: &[String],
    level: Option<&dyn Level>,
    verb: &str,
) -> Result<(String, PathBuf), Failure> {
    match (args, level) {
        ([file], Some(_)) => Ok((String::new(), PathBuf::from(file))),
        ([name, file], None) => Ok((name.clone(), PathBuf::from(file))),
        (_, Some(level)) => Err(Failure::new(
            exit::USAGE,
            format!("with {}: {verb} FILE {}", level.flag(), level.target()),
        )),
        (_, None) => Err(Failure::new(exit::USAGE, format!("{verb} NAME FILE"))),
    }
}

/// A campaign over a target at `level`, its files under `name`.
fn campaign(
    fuzz: &FuzzCrate,
    name: &str,
    level: &dyn Level,
    args: &CampaignArgs,
) -> Result<i32, Failure> {
    let timeout = std::time::Duration::from_millis(args.timeout_ms);
    // Opened here, so a bad target is one line before any campaign.
    let exec = level.executor(timeout)?;
    let catalog = exec.catalog().to_vec();
    let options = level.options(fuzz, name, args);
    let output = crate::cli::Output {
        json: args.json,
        quiet: args.quiet,
    };
    let make = level.clients(exec, timeout);
    crate::cli::campaign(make, &catalog, &options, args.jobs, output).map_err(Failure::from)
}

/// Runs a target binary and passes its exit status on; a status the
/// explorer never uses means the target died before the explorer ran.
fn call(name: &str, binary: &Path, args: &[OsString]) -> Result<i32, Failure> {
    let status = Command::new(binary)
        .args(args)
        .env_remove("DST_FUZZ_RUSTC_WRAPPER")
        .status()
        .map_err(|e| {
            Failure::new(
                exit::INTERNAL,
                format!("cannot run {}: {e}", binary.display()),
            )
        })?;
    match status.code() {
        Some(code)
            if [
                exit::OK,
                exit::FINDING,
                exit::USAGE,
                exit::BAD_INPUT,
                exit::UNWRITABLE,
                exit::INTERNAL,
            ]
            .contains(&code) =>
        {
            Ok(code)
        }
        other => Err(Failure::new(
            exit::SETUP_FAILED,
            format!(
                "target {name} died before the explorer finished ({}): does it panic or crash while setting up, outside the fuzzed closure?",
                other.map_or_else(
                    || {
                        use std::os::unix::process::ExitStatusExt;
                        format!("signal {}", status.signal().unwrap_or(0))
                    },
                    |c| format!("exit status {c}")
                )
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Cli {
        Cli::try_parse_from(["cargo-dst-fuzz"].iter().chain(words)).unwrap()
    }

    #[test]
    fn run_takes_the_campaign_flags_of_a_target_binary() {
        let cli = parse(&[
            "run",
            "bank",
            "--runs",
            "9",
            "--shrink-budget",
            "3",
            "--quiet",
        ]);
        let Cmd::Run {
            name, args, level, ..
        } = cli.command
        else {
            panic!("not run")
        };
        assert_eq!(name.as_deref(), Some("bank"));
        assert!(!level.cmd.cmd);
        assert_eq!(
            (args.runs, args.shrink_budget, args.quiet),
            (Some(9), 3, true)
        );
    }

    #[test]
    fn replay_passes_its_time_limit_on() {
        let cli = parse(&["replay", "bank", "in", "--timeout-ms", "4000", "--json"]);
        let Cmd::Replay { args, replay, .. } = cli.command else {
            panic!("not replay")
        };
        assert_eq!(args, ["bank", "in"]);
        let flags: Vec<String> = replay
            .to_args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(flags, ["--timeout-ms", "4000", "--json"]);
    }

    #[test]
    fn help_describes_every_campaign_flag() {
        use clap::CommandFactory;
        let mut command = Cli::command();
        let run = command.find_subcommand_mut("run").expect("run");
        let help = run.render_long_help().to_string();
        for flag in [
            "--runs",
            "--time",
            "--seed",
            "--timeout-ms",
            "--shrink-budget",
            "--json",
            "--quiet",
            "--stop-on-finding",
            "--jobs",
        ] {
            let line = help
                .lines()
                .position(|l| l.trim_start().starts_with(flag))
                .unwrap_or_else(|| panic!("{flag} missing from\n{help}"));
            let described = help
                .lines()
                .nth(line + 1)
                .is_some_and(|l| !l.trim().is_empty());
            assert!(described, "{flag} has no help text:\n{help}");
        }
    }

    /// The level a command line selects.
    fn selected(words: &[&str]) -> Result<Option<Box<dyn Level>>, Failure> {
        let Cmd::Replay { level, .. } = parse(words).command else {
            panic!("not replay")
        };
        level.selected()
    }

    #[test]
    fn every_level_is_selected_by_its_flag_and_its_findings_replay_with_the_same_target() {
        for (words, flag, name) in [
            (&["--cmd", "--defer", "--", "./kv", "-q"][..], "--cmd", "kv"),
            (
                &["--wasm", "m.wasm", "--fuel", "7", "--env", "K=v", "--", "x"],
                "--wasm",
                "m",
            ),
            (
                &["--wasm", "m.wasm", "--wasi-missing", "enosys"],
                "--wasm",
                "m",
            ),
            (
                &["--riscv", "dir/prog.elf", "--instructions", "9", "--", "-v"],
                "--riscv",
                "prog.elf",
            ),
            (&["--kvm", "g.elf"], "--kvm", "g"),
        ] {
            let line: Vec<&str> = ["replay", "f"].iter().chain(words).copied().collect();
            let level = selected(&line).unwrap().expect("a level");
            assert_eq!((level.flag(), level.name().as_str()), (flag, name));
            // The replay command a finding stores parses back into the
            // same target, every flag that changes a run kept.
            let target = level.target();
            assert_eq!(target, words.join(" "));
            let again: Vec<&str> = ["replay", "f"]
                .into_iter()
                .chain(target.split(' '))
                .collect();
            let again = selected(&again).unwrap().expect("a level");
            assert_eq!(again.target(), target, "{words:?}");
        }
        assert!(selected(&["replay", "bank", "f"]).unwrap().is_none());
        // A path a shell would split is quoted.
        let level = selected(&["replay", "f", "--riscv", "my prog"]).unwrap();
        assert_eq!(level.expect("a level").target(), "--riscv 'my prog'");
        let Err(failure) = selected(&["replay", "f", "--kvm", "g.elf", "--", "x"]) else {
            panic!("a guest's arguments are taken")
        };
        assert_eq!(failure.code, exit::USAGE);
    }

    #[test]
    fn two_level_flags_are_refused() {
        let mut levels = match parse(&["replay", "f", "--wasm", "m.wasm"]).command {
            Cmd::Replay { level, .. } => level,
            _ => panic!("not replay"),
        };
        levels.kvm.kvm = Some(PathBuf::from("g.elf"));
        let Err(Failure { code, message }) = levels.selected() else {
            panic!("two levels selected")
        };
        assert_eq!(code, exit::USAGE);
        assert_eq!(message, "one level at a time: --wasm and --kvm were given");
        // The command line refuses them before.
        let line = ["cargo-dst-fuzz", "replay", "f", "--wasm", "m", "--kvm", "g"];
        assert!(Cli::try_parse_from(line).is_err());
    }

    #[test]
    fn positional_arguments_of_replay_and_minimize() {
        let two = ["bank".to_string(), "f".to_string()];
        let cmd = parse(&["replay", "f", "--cmd", "--", "./kv"]);
        let Cmd::Replay { level, .. } = cmd.command else {
            panic!("not replay")
        };
        let level = level.selected().unwrap();
        assert_eq!(
            name_and_file(&two, None, "replay").unwrap(),
            ("bank".to_string(), PathBuf::from("f"))
        );
        let Failure { code, message } =
            name_and_file(&two, level.as_deref(), "replay").unwrap_err();
        assert_eq!(code, exit::USAGE);
        assert_eq!(message, "with --cmd: replay FILE --cmd -- ./kv");
        assert_eq!(
            name_and_file(&two[1..], level.as_deref(), "minimize")
                .unwrap()
                .1,
            PathBuf::from("f")
        );
    }
}
