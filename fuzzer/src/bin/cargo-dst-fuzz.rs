//! `cargo dst-fuzz`: builds dst targets with edge coverage on the user's
//! crates and runs their explorer. Thin on purpose: the target binaries carry
//! the explorer (`dst_fuzz::target!`); this finds, builds and calls them.
//!
//! It is also its own `RUSTC_WRAPPER` during builds: with
//! `DST_FUZZ_RUSTC_WRAPPER=1` it adds sanitizer-coverage flags to the crates
//! that are the user's (path crates other than dst's own) and compiles
//! everything else (registry crates, dst, LibAFL, build scripts, proc macros)
//! unchanged.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{Args, Parser, Subcommand};
use dst_fuzz::exit;

/// Flags that give a crate LLVM's inline 8-bit edge counters.
const SANCOV_FLAGS: &[&str] = &[
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=3",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
];

/// dst's own crates, never instrumented.
const DST_CRATES: &[&str] = &[
    "dst",
    "dst_kernel",
    "dst_executors",
    "dst_fuzz",
    "dst_c",
    "dst_oracles",
];

#[derive(Parser)]
#[command(
    name = "cargo dst-fuzz",
    bin_name = "cargo dst-fuzz",
    about = "Explore dst targets: find, shrink and replay runs that break their properties"
)]
struct Cli {
    /// The fuzz crate's folder (holding its Cargo.toml).
    #[arg(long, global = true, default_value = "fuzz")]
    fuzz_dir: PathBuf,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Create a fuzz/ folder with one example target in the crate here.
    Init {
        /// The crate's folder.
        #[arg(long, default_value = ".")]
        path: PathBuf,
    },
    /// List the targets.
    List,
    /// Build a target with edge coverage.
    Build { name: String },
    /// Explore a target: build it with coverage, then search for runs that
    /// break its properties. With --cmd, explore any program linking libdst
    /// (or the dst crate): `run --cmd -- ./service ARGS`.
    Run {
        /// The target (with --cmd: a name for its files, by default the
        /// program's file name).
        name: Option<String>,
        /// Clients exploring in parallel (LibAFL launcher and LLMP).
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        #[command(flatten)]
        pass: Passthrough,
        #[command(flatten)]
        cmd: CmdArgs,
    },
    /// Reproduce and explain a run: `replay NAME FILE`, or
    /// `replay FILE --cmd -- ./service ARGS`.
    Replay {
        /// NAME FILE, or FILE with --cmd.
        #[arg(num_args = 1..=2, required = true)]
        args: Vec<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cmd: CmdArgs,
        /// Per-run time limit in milliseconds (--cmd).
        #[arg(long, default_value_t = dst_fuzz::explore::DEFAULT_TIMEOUT_MS)]
        timeout_ms: u64,
    },
    /// Shrink a failing input: `minimize NAME FILE`, or
    /// `minimize FILE --cmd -- ./service ARGS`.
    Minimize {
        /// NAME FILE, or FILE with --cmd.
        #[arg(num_args = 1..=2, required = true)]
        args: Vec<String>,
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        cmd: CmdArgs,
        /// Per-run time limit in milliseconds (--cmd).
        #[arg(long, default_value_t = dst_fuzz::explore::DEFAULT_TIMEOUT_MS)]
        timeout_ms: u64,
    },
    /// Print the property table: `report NAME`, or `report --cmd -- ./service`.
    Report {
        name: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cmd: CmdArgs,
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
        #[arg(long, value_parser = dst_fuzz::cli::parse_duration)]
        timeout: Option<std::time::Duration>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print every assertion and fault site of a target, or of any binary
    /// linking libdst (when NAME is a path to a file: read from its
    /// dst_catalog section, without running it).
    Catalog {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

/// A program to explore in its own process, over shared memory.
#[derive(Args)]
struct CmdArgs {
    /// The target is the program after `--`, run through its fork server.
    #[arg(long)]
    cmd: bool,
    /// Start the fork server at dst_setup_complete (DST_DEFER=1), so setup
    /// runs once.
    #[arg(long, requires = "cmd")]
    defer: bool,
    /// The program and its arguments.
    #[arg(last = true)]
    command: Vec<OsString>,
}

impl CmdArgs {
    /// The program and its executor, when --cmd is given.
    fn process(&self, timeout_ms: u64) -> Result<Option<dst_executors::Process>, Failure> {
        if !self.cmd {
            return Ok(None);
        }
        self.process_with(timeout_ms, self.catalog()?).map(Some)
    }

    /// The executor for the program, given its catalog (read once).
    fn process_with(
        &self,
        timeout_ms: u64,
        catalog: Vec<dst::catalog::SiteInfo>,
    ) -> Result<dst_executors::Process, Failure> {
        let (program, args) = self.program()?;
        let timeout = std::time::Duration::from_millis(timeout_ms);
        let mut exec = dst_executors::Process::with_catalog(&program, args, timeout, catalog)
            .map_err(|e| (exit::BAD_INPUT, e))?;
        exec.set_defer(self.defer);
        Ok(exec)
    }

    /// The program (found on PATH if need be) and its arguments.
    fn program(&self) -> Result<(PathBuf, &[OsString]), Failure> {
        let Some((program, args)) = self.command.split_first() else {
            return Err((
                exit::USAGE,
                "--cmd needs the program after `--`: --cmd -- ./service ARGS".into(),
            ));
        };
        Ok((which(Path::new(program))?, args))
    }

    /// The program's catalog: its dst_catalog section, or asked of a Rust
    /// binary.
    fn catalog(&self) -> Result<Vec<dst::catalog::SiteInfo>, Failure> {
        dst_executors::elf::program_catalog(&self.program()?.0).map_err(|e| (exit::BAD_INPUT, e))
    }

    /// The default name of the program's files: its file name.
    fn name(&self) -> String {
        self.command
            .first()
            .and_then(|p| Path::new(p).file_stem())
            .map_or_else(|| "cmd".into(), |s| s.to_string_lossy().into_owned())
    }

    /// The command line, quoted for a shell.
    fn shell_words(&self) -> String {
        self.command
            .iter()
            .map(|w| {
                let w = w.to_string_lossy();
                if !w.is_empty()
                    && w.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "/._-=:,".contains(c))
                {
                    w.into_owned()
                } else {
                    format!("'{}'", w.replace('\'', "'\\''"))
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `program` as given when it names a file, else found on PATH.
fn which(program: &Path) -> Result<PathBuf, Failure> {
    if program.components().count() > 1 || program.is_file() {
        return Ok(program.to_path_buf());
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            (
                exit::USAGE,
                format!("no program {} on PATH", program.display()),
            )
        })
}

#[derive(Args)]
struct Passthrough {
    #[arg(long)]
    runs: Option<u64>,
    #[arg(long)]
    time: Option<String>,
    #[arg(long)]
    seed: Option<u64>,
    #[arg(long)]
    timeout_ms: Option<u64>,
    #[arg(long)]
    json: bool,
    #[arg(long)]
    quiet: bool,
    #[arg(long)]
    stop_on_finding: bool,
}

fn main() {
    // Output piped into `head` ends quietly, as for other command-line tools.
    // SAFETY: setting a signal's action to the default, before any thread.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let mut args: Vec<OsString> = std::env::args_os().collect();
    if std::env::var_os("DST_FUZZ_RUSTC_WRAPPER").is_some() && args.len() >= 2 {
        wrap_rustc(&args[1..]);
    }
    // `cargo dst-fuzz ...` runs `cargo-dst-fuzz dst-fuzz ...`.
    if args.get(1).is_some_and(|a| a == "dst-fuzz") {
        args.remove(1);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            std::process::exit(if err.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    let code = match run(cli) {
        Ok(code) => code,
        Err((code, message)) => {
            eprintln!("cargo dst-fuzz: {message}");
            code
        }
    };
    std::process::exit(code);
}

type Failure = (i32, String);

fn run(cli: Cli) -> Result<i32, Failure> {
    let fuzz = FuzzCrate {
        dir: cli.fuzz_dir.clone(),
    };
    match cli.command {
        Cmd::Init { path } => init(&path),
        Cmd::List => {
            for name in fuzz.targets()? {
                println!("{name}");
            }
            Ok(exit::OK)
        }
        Cmd::Build { name } => fuzz.build(&name).map(|_| exit::OK),
        Cmd::Run {
            name,
            jobs,
            pass,
            cmd,
        } => {
            if cmd.cmd {
                let name = name.unwrap_or_else(|| cmd.name());
                return run_cmd(&fuzz, &name, &cmd, jobs, &pass);
            }
            let name = name.ok_or((exit::USAGE, "which target? `run NAME`".to_string()))?;
            let binary = fuzz.build(&name)?;
            let mut args: Vec<OsString> = vec!["fuzz".into()];
            args.extend(fuzz.paths(&name));
            if jobs != 1 {
                args.extend(["--jobs".into(), jobs.to_string().into()]);
            }
            for (flag, value) in [
                ("--runs", pass.runs.map(|v| v.to_string())),
                ("--time", pass.time.clone()),
                ("--seed", pass.seed.map(|v| v.to_string())),
                ("--timeout-ms", pass.timeout_ms.map(|v| v.to_string())),
            ] {
                if let Some(value) = value {
                    args.extend([flag.into(), value.into()]);
                }
            }
            for (flag, on) in [
                ("--json", pass.json),
                ("--quiet", pass.quiet),
                ("--stop-on-finding", pass.stop_on_finding),
            ] {
                if on {
                    args.push(flag.into());
                }
            }
            call(&name, &binary, &args)
        }
        Cmd::Replay {
            args,
            json,
            cmd,
            timeout_ms,
        } => {
            let (name, file) = name_and_file(&args, cmd.cmd, "replay")?;
            if let Some(mut exec) = cmd.process(timeout_ms)? {
                let input = dst_fuzz::store::read_input(&file).map_err(store_failure)?;
                return dst_fuzz::cli::replay_with(&mut exec, &input, json).map_err(store_failure);
            }
            let binary = fuzz.build(&name)?;
            let mut args: Vec<OsString> = vec!["replay".into(), file.into()];
            if json {
                args.push("--json".into());
            }
            call(&name, &binary, &args)
        }
        Cmd::Minimize {
            args,
            out,
            cmd,
            timeout_ms,
        } => {
            let (name, file) = name_and_file(&args, cmd.cmd, "minimize")?;
            if let Some(mut exec) = cmd.process(timeout_ms)? {
                return dst_fuzz::cli::minimize_with(
                    &mut exec,
                    &file,
                    out,
                    dst_fuzz::explore::DEFAULT_SHRINK_BUDGET,
                )
                .map_err(store_failure);
            }
            let binary = fuzz.build(&name)?;
            let mut args: Vec<OsString> = vec!["minimize".into(), file.into()];
            if let Some(out) = out {
                args.extend(["--out".into(), out.into()]);
            }
            call(&name, &binary, &args)
        }
        Cmd::Report { name, json, cmd } => {
            if cmd.cmd {
                let name = name.unwrap_or_else(|| cmd.name());
                return dst_fuzz::cli::report_command(&fuzz.campaign(&name), &cmd.catalog()?, json)
                    .map_err(store_failure);
            }
            let name = name.ok_or((exit::USAGE, "which target? `report NAME`".to_string()))?;
            let binary = fuzz.build(&name)?;
            let mut args: Vec<OsString> = vec!["report".into(), "--campaign".into()];
            args.push(fuzz.campaign(&name).into());
            if json {
                args.push("--json".into());
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
        Cmd::Catalog { name, json } if Path::new(&name).is_file() => {
            let sites =
                dst_executors::elf::catalog(Path::new(&name)).map_err(|e| (exit::BAD_INPUT, e))?;
            dst_fuzz::report::print_catalog(&sites, json);
            Ok(exit::OK)
        }
        Cmd::Catalog { name, json } => {
            let binary = fuzz.build(&name)?;
            let mut args: Vec<OsString> = vec!["catalog".into()];
            if json {
                args.push("--json".into());
            }
            call(&name, &binary, &args)
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
        .map_err(|e| (exit::BAD_INPUT, e.to_string()))?;
    if json {
        let text = serde_json::to_string(&report).map_err(|e| (exit::INTERNAL, e.to_string()))?;
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
/// `FILE` alone with --cmd (the name is then unused and empty).
fn name_and_file(args: &[String], cmd: bool, verb: &str) -> Result<(String, PathBuf), Failure> {
    match (args, cmd) {
        ([file], true) => Ok((String::new(), PathBuf::from(file))),
        ([name, file], false) => Ok((name.clone(), PathBuf::from(file))),
        (_, true) => Err((
            exit::USAGE,
            format!("with --cmd: {verb} FILE --cmd -- PROGRAM"),
        )),
        (_, false) => Err((exit::USAGE, format!("{verb} NAME FILE"))),
    }
}

fn store_failure(err: dst_fuzz::store::StoreError) -> Failure {
    (err.exit_code(), err.to_string())
}

/// `run --cmd`: the explorer loop in this process, over the program's fork
/// server.
fn run_cmd(
    fuzz: &FuzzCrate,
    name: &str,
    cmd: &CmdArgs,
    jobs: usize,
    pass: &Passthrough,
) -> Result<i32, Failure> {
    use dst_fuzz::subject::ProcessSubject;
    let timeout_ms = pass
        .timeout_ms
        .unwrap_or(dst_fuzz::explore::DEFAULT_TIMEOUT_MS);
    let catalog = cmd.catalog()?;
    let time = pass
        .time
        .as_deref()
        .map(dst_fuzz::cli::parse_duration)
        .transpose()
        .map_err(|e| (exit::USAGE, e))?;
    let words = cmd.shell_words();
    let defer = if cmd.defer { " --defer" } else { "" };
    let options = dst_fuzz::explore::Options {
        name: name.to_string(),
        runs: pass.runs,
        time,
        seed: pass.seed.unwrap_or(0),
        corpus_dir: fuzz.dir.join("corpus").join(name),
        findings_dir: fuzz.dir.join("findings").join(name),
        campaign_file: fuzz.campaign(name),
        timeout: std::time::Duration::from_millis(timeout_ms),
        status: !pass.quiet,
        shrink_budget: dst_fuzz::explore::DEFAULT_SHRINK_BUDGET,
        stop_on_finding: pass.stop_on_finding,
        reproduce: Some(serde_json::json!({
            "explain": format!("cargo dst-fuzz replay {{input}} --cmd{defer} -- {words}"),
            "debugger": format!("DST_INPUT={{input}} gdb --args {words}"),
        })),
    };
    // Each client makes its own executor (its own segment and fork server).
    let client_catalog = catalog.clone();
    let make = move || match cmd.process_with(timeout_ms, client_catalog) {
        Ok(exec) => Ok(ProcessSubject::new(exec)),
        Err((_, message)) => Err(dst_fuzz::store::StoreError::Libafl(message)),
    };
    let output = dst_fuzz::cli::Output {
        json: pass.json,
        quiet: pass.quiet,
    };
    dst_fuzz::cli::campaign(make, &catalog, &options, jobs, output).map_err(store_failure)
}

/// Runs a target binary and passes its exit status on; a status the
/// explorer never uses means the target died before the explorer ran.
fn call(name: &str, binary: &Path, args: &[OsString]) -> Result<i32, Failure> {
    let status = Command::new(binary)
        .args(args)
        .env_remove("DST_FUZZ_RUSTC_WRAPPER")
        .status()
        .map_err(|e| {
            (
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
        other => Err((
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

struct FuzzCrate {
    dir: PathBuf,
}

impl FuzzCrate {
    fn manifest(&self) -> PathBuf {
        self.dir.join("Cargo.toml")
    }

    fn metadata(&self) -> Result<serde_json::Value, Failure> {
        let manifest = self.manifest();
        if !manifest.exists() {
            return Err((
                exit::UNKNOWN_TARGET,
                format!(
                    "no fuzz crate at {} (create one with `cargo dst-fuzz init`, or pass --fuzz-dir)",
                    manifest.display()
                ),
            ));
        }
        metadata(&manifest)
    }

    /// The binary targets of the fuzz crate.
    fn targets(&self) -> Result<Vec<String>, Failure> {
        let metadata = self.metadata()?;
        let package = package_of(&metadata, &self.manifest())?;
        let mut names = Vec::new();
        for target in package["targets"].as_array().into_iter().flatten() {
            let is_bin = target["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"));
            if is_bin && let Some(name) = target["name"].as_str() {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }
    /// Builds target `name` with coverage; returns the binary's path.
    fn build(&self, name: &str) -> Result<PathBuf, Failure> {
        let targets = self.targets()?;
        if !targets.iter().any(|t| t == name) {
            return Err((
                exit::UNKNOWN_TARGET,
                format!(
                    "no target {name:?} in {} (targets: {})",
                    self.manifest().display(),
                    if targets.is_empty() {
                        "none".to_string()
                    } else {
                        targets.join(", ")
                    }
                ),
            ));
        }
        let metadata = self.metadata()?;
        let target_dir = PathBuf::from(metadata["target_directory"].as_str().ok_or((
            exit::INTERNAL,
            "cargo metadata has no target_directory".into(),
        ))?)
        .join("dst-fuzz");
        let me = std::env::current_exe()
            .map_err(|e| (exit::INTERNAL, format!("cannot find this executable: {e}")))?;
        let status = Command::new(cargo())
            .args(["build", "--release", "--manifest-path"])
            .arg(self.manifest())
            .args(["--bin", name])
            .env("RUSTC_WRAPPER", &me)
            .env("DST_FUZZ_RUSTC_WRAPPER", "1")
            .env("CARGO_TARGET_DIR", &target_dir)
            .status()
            .map_err(|e| (exit::INTERNAL, format!("cannot run cargo build: {e}")))?;
        if !status.success() {
            return Err((exit::BUILD_FAILED, format!("target {name} did not build")));
        }
        Ok(target_dir.join("release").join(name))
    }

    fn campaign(&self, name: &str) -> PathBuf {
        self.dir.join("campaigns").join(format!("{name}.json"))
    }

    /// The corpus, findings and campaign paths of target `name`.
    fn paths(&self, name: &str) -> Vec<OsString> {
        vec![
            "--corpus".into(),
            self.dir.join("corpus").join(name).into(),
            "--findings".into(),
            self.dir.join("findings").join(name).into(),
            "--campaign".into(),
            self.campaign(name).into(),
        ]
    }
}

fn metadata(manifest: &Path) -> Result<serde_json::Value, Failure> {
    let output = Command::new(cargo())
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .map_err(|e| (exit::INTERNAL, format!("cannot run cargo metadata: {e}")))?;
    if !output.status.success() {
        return Err((
            exit::BUILD_FAILED,
            format!(
                "cargo metadata failed for {}: {}",
                manifest.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| {
        (
            exit::INTERNAL,
            format!("cargo metadata printed no JSON: {e}"),
        )
    })
}

/// The package of `metadata` whose manifest is `manifest`.
fn package_of<'a>(
    metadata: &'a serde_json::Value,
    manifest: &Path,
) -> Result<&'a serde_json::Value, Failure> {
    let manifest = manifest
        .canonicalize()
        .map_err(|e| (exit::BAD_INPUT, format!("{}: {e}", manifest.display())))?;
    metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["manifest_path"].as_str().map(Path::new) == Some(manifest.as_path()))
        .ok_or((
            exit::BAD_INPUT,
            format!("{} is a workspace without a package", manifest.display()),
        ))
}

fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The rustc wrapper: compiles one crate, instrumented if it is the user's.
fn wrap_rustc(args: &[OsString]) -> ! {
    let rustc = &args[0];
    let rest = &args[1..];
    let text: Vec<String> = rest
        .iter()
        .map(|a| a.to_string_lossy().to_string())
        .collect();
    let crate_name = text
        .iter()
        .position(|a| a == "--crate-name")
        .and_then(|i| text.get(i + 1));
    let proc_macro = text
        .windows(2)
        .any(|w| w[0] == "--crate-type" && w[1] == "proc-macro");
    let source = text.iter().find(|a| a.ends_with(".rs"));
    let from_registry = source.is_some_and(|s| {
        s.contains("/.cargo/registry/")
            || s.contains("/.cargo/git/")
            || s.contains("/registry/src/")
    });
    let instrument = match crate_name {
        Some(name) => {
            !name.starts_with("build_script")
                && !proc_macro
                && !from_registry
                && !DST_CRATES.contains(&name.as_str())
        }
        None => false,
    };
    if std::env::var_os("DST_FUZZ_WRAPPER_LOG").is_some() && crate_name.is_some() {
        eprintln!(
            "cargo dst-fuzz: {} {}",
            if instrument {
                "instrumenting"
            } else {
                "compiling"
            },
            crate_name.map_or("?", |n| n.as_str())
        );
    }
    let mut cmd = Command::new(rustc);
    cmd.args(rest);
    if instrument {
        cmd.args(SANCOV_FLAGS);
    }
    let code = match cmd.status() {
        Ok(status) => status.code().unwrap_or(1),
        Err(e) => {
            eprintln!(
                "cargo dst-fuzz: cannot run {}: {e}",
                rustc.to_string_lossy()
            );
            1
        }
    };
    std::process::exit(code);
}

/// Creates `fuzz/` in the crate at `path`, with one example target.
fn init(path: &Path) -> Result<i32, Failure> {
    let manifest = path.join("Cargo.toml");
    if !manifest.exists() {
        return Err((
            exit::BAD_INPUT,
            format!("no crate at {}: Cargo.toml is missing", path.display()),
        ));
    }
    let metadata = metadata(&manifest)?;
    let name = package_of(&metadata, &manifest)?["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let fuzz = path.join("fuzz");
    if fuzz.join("Cargo.toml").exists() {
        return Err((
            exit::UNWRITABLE,
            format!(
                "{} already exists; not touching it",
                fuzz.join("Cargo.toml").display()
            ),
        ));
    }
    let dst_root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("dst-fuzz lives in the dst repository")
        .to_path_buf();
    let cargo_toml = format!(
        r#"[package]
name = "{name}-fuzz"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
{name} = {{ path = ".." }}
dst = {{ path = "{sdk}" }}
dst-fuzz = {{ path = "{fuzzer}" }}

[[bin]]
name = "example"
path = "fuzz_targets/example.rs"
test = false
doc = false

# The fuzz crate is its own workspace, as with cargo-fuzz.
[workspace]
"#,
        sdk = dst_root.join("sdk").display(),
        fuzzer = dst_root.join("fuzzer").display(),
    );
    let target = r#"//! An example dst target. Replace the body with a test of your crate: take
//! every random choice through `dst::random`, inject faults with `dst::fault!`,
//! and state what must hold with `dst::assert_*!`.

dst_fuzz::target!(|| {
    let capacity = 1 + dst::random::below(8);
    let mut stored = Vec::new();
    for _ in 0..16 {
        if dst::fault!("the write is lost") {
            continue;
        }
        if stored.len() < capacity as usize {
            stored.push(dst::random::u64());
        }
    }
    dst::assert_sometimes!(stored.len() as u64 == capacity, "the store fills up");
    dst::assert_always!(stored.len() as u64 <= capacity, "the store respects its capacity");
});
"#;
    let write = |p: PathBuf, contents: &str| {
        std::fs::create_dir_all(p.parent().expect("a file in a folder"))
            .and_then(|_| std::fs::write(&p, contents))
            .map_err(|e| {
                (
                    exit::UNWRITABLE,
                    format!("cannot write {}: {e}", p.display()),
                )
            })
    };
    write(fuzz.join("Cargo.toml"), &cargo_toml)?;
    write(fuzz.join("fuzz_targets").join("example.rs"), target)?;
    write(fuzz.join(".gitignore"), "target\ncorpus\ncampaigns\n")?;
    // Start from the versions dst was tested with (cargo adds and drops
    // entries for the user's own dependencies).
    if let Ok(lock) = std::fs::read_to_string(dst_root.join("Cargo.lock")) {
        write(fuzz.join("Cargo.lock"), &lock)?;
    }
    println!(
        "created {} with target `example`; run it with `cargo dst-fuzz run example`",
        fuzz.display()
    );
    Ok(exit::OK)
}
