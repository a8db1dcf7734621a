//! `cargo dst-fuzz libfuzzer HARNESS [-flag=value ...] [DIR ...]`: a
//! libFuzzer command line on a harness built by `cc --libfuzzer` (what the
//! harness runs when started by itself to fuzz), so OSS-Fuzz and
//! ClusterFuzzLite run scripts work unchanged.
//!
//! - Flags as libFuzzer's (`dst::libfuzzer::Flags`), after the
//!   `[libfuzzer]` section of `HARNESS.options`; `-runs`,
//!   `-max_total_time`, `-seed`, `-timeout`, `-max_len`, `-len_control`
//!   (default 1000, `explore::DEFAULT_LEN_CONTROL` says why) and `-dict`
//!   set the campaign (`HARNESS.dict` is read too, as are the harness's own
//!   strings, `dst_tokens`; `-use_cmp=0` turns off the comparison log,
//!   as libFuzzer's turns off its table of recent comparisons, and keeps
//!   the dictionaries). Unknown flags are warned about, as libFuzzer
//!   does; a bad value is exit 2, a bad `.options`, dictionary or seed
//!   archive exit 4.
//! - Files as arguments: the harness runs them itself. Directories are
//!   the corpus: their files (and `HARNESS_seed_corpus.zip`) seed the
//!   campaign, and every input the campaign keeps is written into the
//!   first one, named by its SHA-1, as libFuzzer does.
//! - The campaign stops at the first finding: its harness bytes are
//!   written to `-exact_artifact_path` or `{-artifact_prefix}crash-<sha1>`
//!   (`timeout-<sha1>`), with the dst input (every decision, faults
//!   included) beside it as `<artifact>.dst`; the exit status is
//!   libFuzzer's (77 crash, 70 timeout, or `-error_exitcode` /
//!   `-timeout_exitcode`), 0 when nothing was found.
//!
//! dst's own campaign files live in a temporary folder that is removed at
//! the end: the corpus folder is the state, as for libFuzzer.
//!
//! [`in_process`] is the same command line for a harness that links the
//! fuzzing engine (`engine/`, `libdst_engine.a`): the harness runs in the
//! explorer's own process, one call per run (the in-process executor), and
//! needs no `cargo-dst-fuzz`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dst::libfuzzer::{self as lf, Flags};
use dst_kernel::Signature;
use sha1::{Digest, Sha1};

use super::cmd::CmdArgs;
use super::level::Level as _;
use crate::exit;
use crate::exit::Failure;
use crate::explore::Options;

/// The largest input dst's explorer makes (its LibAFL state's limit),
/// less the seed and the length decision.
const MAX_MAX_LEN: usize = (1 << 16) - 12;

/// `HARNESS` with `suffix` appended to its file name.
fn sibling(harness: &Path, suffix: &str) -> PathBuf {
    let mut name = harness.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn sha1_hex(data: &[u8]) -> String {
    Sha1::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where the harness runs.
enum Subject {
    /// Its own program, through the process executor.
    Program,
    /// This process: the harness's entry point, as an in-process target.
    Here(crate::cli::Target),
}

/// Runs the libFuzzer command line `args` on `harness`.
pub fn libfuzzer(harness: &Path, args: &[String]) -> Result<i32, Failure> {
    run(harness, args, Subject::Program)
}

/// Runs the libFuzzer command line `args` (the program's, without its
/// name) on `target`, a harness linked into this program, in this
/// process. Returns the exit status (after printing a failure).
pub fn in_process(args: &[String], target: crate::cli::Target) -> i32 {
    let code = match std::fs::read_link("/proc/self/exe") {
        Ok(me) => run(&me, args, Subject::Here(target)).unwrap_or_else(|failure| {
            eprintln!("dst: {}", failure.message);
            failure.code
        }),
        Err(err) => {
            eprintln!("dst: cannot find this program's path: {err}");
            exit::SETUP_FAILED
        }
    };
    crate::explore::report_exit(code);
    code
}

fn run(harness: &Path, args: &[String], subject: Subject) -> Result<i32, Failure> {
    let mut flags = Flags::default();
    let options_file = sibling(harness, ".options");
    if let Ok(text) = std::fs::read_to_string(&options_file) {
        flags.add_options(&text).map_err(|e| {
            Failure::new(exit::BAD_INPUT, format!("{}: {e}", options_file.display()))
        })?;
    }
    flags
        .add_args(args)
        .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    for flag in &flags.unknown {
        eprintln!("WARNING: unrecognized flag '{flag}'; use -help=1 to list all flags");
    }
    if !harness.is_file() {
        return Err(Failure::new(
            exit::USAGE,
            format!("{}: no such harness", harness.display()),
        ));
    }
    let files = !flags.inputs.is_empty() && flags.inputs.iter().all(|p| p.is_file());
    if (flags.help || files) && matches!(subject, Subject::Program) {
        // The harness runs files (and prints libFuzzer's help) itself.
        let status = std::process::Command::new(harness)
            .args(args)
            .status()
            .map_err(|e| Failure::new(exit::SETUP_FAILED, format!("{}: {e}", harness.display())))?;
        return Ok(status.code().unwrap_or(flags.crash_exit()));
    }
    let corpus_dirs: Vec<&PathBuf> = flags.inputs.iter().collect();
    if let Some(first) = corpus_dirs.first() {
        std::fs::create_dir_all(first)
            .map_err(|e| Failure::new(exit::UNWRITABLE, format!("{}: {e}", first.display())))?;
    }
    let mut seeds = Vec::new();
    for dir in &corpus_dirs {
        read_dir_files(dir, &mut seeds)?;
    }
    let zip = sibling(harness, "_seed_corpus.zip");
    if zip.is_file() {
        read_zip(&zip, &mut seeds)?;
    }
    let max_len = match flags.max_len.filter(|&m| m > 0) {
        Some(max) => max.min(MAX_MAX_LEN),
        None => seeds
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
            .clamp(lf::DEFAULT_MAX_LEN, MAX_MAX_LEN),
    };
    // SAFETY: the driver is single-threaded until the campaign starts; the
    // harness inherits the variable.
    unsafe { std::env::set_var(lf::MAX_LEN_ENV, max_len.to_string()) };

    if flags.merge {
        return merge(harness, subject, &flags, &corpus_dirs, max_len);
    }
    let temp = std::env::temp_dir();
    sweep_killed(&temp);
    let work = temp.join(format!("{WORK_PREFIX}{}", std::process::id()));
    let lock = hold(&work);
    let result = campaign(
        harness,
        subject,
        &flags,
        &corpus_dirs,
        &seeds,
        max_len,
        &work,
    );
    let _ = std::fs::remove_dir_all(&work);
    drop(lock);
    result
}

/// A campaign's work folder in the temporary folder: this, then its pid.
const WORK_PREFIX: &str = "dst-libfuzzer-";

/// The lock file in a campaign's work folder.
const LOCK: &str = ".lock";

/// Creates `work` and locks its lock file for the campaign (`None` if it
/// cannot: the sweep then goes by the pid alone): a sweeper in another
/// PID namespace sharing the temporary folder, where `kill` cannot see
/// this process, finds it held.
fn hold(work: &Path) -> Option<std::fs::File> {
    use std::os::fd::AsRawFd;
    std::fs::create_dir_all(work).ok()?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(work.join(LOCK))
        .ok()?;
    // SAFETY: flock on the descriptor `file` owns, for its lifetime.
    (unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0).then_some(file)
}

/// Whether no live campaign holds the lock of the work folder `dir` (one
/// without a lock file has none).
fn unlocked(dir: &Path) -> bool {
    use std::os::fd::AsRawFd;
    match std::fs::File::open(dir.join(LOCK)) {
        Err(_) => true,
        Ok(file) => {
            // SAFETY: flock on the descriptor the file owns; closing it
            // releases the lock taken.
            let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            taken == 0
        }
    }
}

/// Removes the work folders of campaigns that were killed (one that ends
/// removes its own): `dst-libfuzzer-PID` in `temp` whose process is gone
/// and whose lock no one holds.
fn sweep_killed(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(WORK_PREFIX))
            .and_then(|p| p.parse::<libc::pid_t>().ok())
            .filter(|&p| p > 0)
        else {
            continue;
        };
        // SAFETY: signal 0 sends nothing: it asks whether `pid` exists.
        let gone = unsafe { libc::kill(pid, 0) } == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone && unlocked(&entry.path()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The harness's program through its fork server, started at setup
/// complete (`--cmd --defer`).
fn program(harness: &Path) -> CmdArgs {
    CmdArgs {
        cmd: true,
        defer: true,
        command: vec![harness.as_os_str().to_owned()],
    }
}

/// The subject's executor (with a limit of `timeout` per run, where the
/// executor enforces one).
fn executor(
    harness: &Path,
    subject: Subject,
    timeout: Duration,
) -> Result<Box<dyn dst_executors::Executor>, Failure> {
    Ok(match subject {
        Subject::Program => program(harness).executor(timeout)?,
        Subject::Here(target) => {
            // Edges from the harness's inline 8-bit counters (clang's
            // -fsanitize=fuzzer-no-link); without them, gcc's trace-pc
            // edges, hashed into the region's map, which then needs room.
            let layout = dst::region::Layout {
                sites_capacity: dst::catalog::count().max(1),
                ..dst::region::Layout::default()
            };
            if dst_executors::edges::instrumented() {
                let layout = dst::region::Layout {
                    coverage_size: dst_executors::inprocess::DECISION_COVERAGE,
                    ..layout
                };
                Box::new(dst_executors::InProcess::with_layout(target, layout))
            } else {
                let layout = dst::region::Layout {
                    coverage_size: 1 << 16,
                    ..layout
                };
                Box::new(dst_executors::InProcess::with_region_edges(target, layout))
            }
        }
    })
}

/// Inputs whose runs are repeated to measure a harness's stability.
const STABILITY_INPUTS: usize = 16;
/// Below this stability (AFL++'s measure: the share of reached map slots
/// whose count bucket is the same in every run of an input), a harness
/// that runs in the explorer's process runs in a fork per input instead.
pub const MIN_STABILITY: f64 = 0.9;

/// The classified coverage maps (edges, then the region's) of one run of
/// the dst input `input` on `exec`.
fn run_maps(exec: &mut dyn dst_executors::Executor, input: &[u8]) -> Vec<u8> {
    let maps = exec.coverage();
    for map in [&maps.edges, &maps.decisions] {
        // SAFETY: the executor's maps, between runs.
        unsafe { std::ptr::write_bytes(map.as_mut_ptr(), 0, map.len()) };
    }
    let _ = exec.execute(input);
    let maps = exec.coverage();
    let mut seen = Vec::with_capacity(maps.edges.len() + maps.decisions.len());
    for map in [&maps.edges, &maps.decisions] {
        // SAFETY: as above; the run has ended.
        let counts = unsafe { std::slice::from_raw_parts_mut(map.as_mut_ptr(), map.len()) };
        crate::explore::feedback::classify_counts(counts);
        seen.extend_from_slice(counts);
    }
    seen
}

/// The share of map slots reached by runs of `inputs` (dst inputs) whose
/// count bucket is the same in three runs of each (after a first run,
/// which may set up what later runs reuse); 1 when no slot is reached.
fn stability(exec: &mut dyn dst_executors::Executor, inputs: &[Vec<u8>]) -> f64 {
    let (mut reached, mut unstable) = (0usize, 0usize);
    for input in inputs {
        let _ = run_maps(exec, input);
        let runs: Vec<Vec<u8>> = (0..3).map(|_| run_maps(exec, input)).collect();
        for slot in 0..runs[0].len() {
            let first = runs[0][slot];
            if runs.iter().any(|r| r[slot] != 0) {
                reached += 1;
                if runs.iter().any(|r| r[slot] != first) {
                    unstable += 1;
                }
            }
        }
    }
    debug_assert!(unstable <= reached);
    if reached == 0 {
        1.0
    } else {
        1.0 - unstable as f64 / reached as f64
    }
}

/// The findings the campaign added (not in `known`) that a fresh process
/// of `harness` does not reproduce: run with the finding's input as
/// `DST_INPUT`, it must crash, break the property (exit status 1), or
/// run past the limit, as the finding did.
fn unconfirmed(
    harness: &Path,
    options: &Options,
    known: &std::collections::BTreeSet<String>,
) -> Result<Vec<String>, Failure> {
    let mut out = Vec::new();
    for name in crate::store::known_findings(&options.findings_dir).map_err(Failure::from)? {
        if known.contains(&name) {
            continue;
        }
        let dir = options.findings_dir.join(&name);
        let timeout = matches!(
            dst_kernel::finding::read_summary(&dir).map(|s| s.signature),
            Some(Signature::Timeout)
        );
        let mut child = std::process::Command::new(harness)
            .env_remove(dst::shm::REGION_ENV)
            .env_remove(dst::forkserver::FORKSERVER_ENV)
            .env_remove("DST_SEED")
            .env("DST_INPUT", dir.join("input"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| Failure::new(exit::SETUP_FAILED, format!("{}: {e}", harness.display())))?;
        let limit = options.timeout * 2 + Duration::from_secs(1);
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child
                .try_wait()
                .map_err(|e| Failure::new(exit::INTERNAL, e.to_string()))?
            {
                break Some(status);
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let again = match status {
            None => timeout,
            Some(status) => !timeout && !status.success(),
        };
        if !again {
            out.push(name);
        }
    }
    Ok(out)
}

/// `-merge=1`: runs the files of the first folder, then those of the
/// others, smallest first, and copies into the first folder each file that
/// reaches an edge (or an edge's count bucket) no earlier file reached, as
/// libFuzzer's merge does. (An input that kills the process ends the merge
/// in this process; libFuzzer's merge goes on in a new one.)
fn merge(
    harness: &Path,
    subject: Subject,
    flags: &Flags,
    corpus_dirs: &[&PathBuf],
    max_len: usize,
) -> Result<i32, Failure> {
    let Some((first, others)) = corpus_dirs.split_first() else {
        return Err(Failure::new(
            exit::USAGE,
            "-merge=1 needs the folder to merge into and at least one more",
        ));
    };
    let timeout = Duration::from_secs(flags.timeout.unwrap_or(1200).max(1));
    let mut exec = executor(harness, subject, timeout)?;
    let mut reached: Vec<u8> = Vec::new();
    let mut run = |data: &[u8]| -> usize {
        let seen = run_maps(&mut *exec, &lf::encode(&data[..data.len().min(max_len)]));
        reached.resize(seen.len(), 0);
        let mut new = 0;
        for (old, now) in reached.iter_mut().zip(&seen) {
            if *now & !*old != 0 {
                new += 1;
                *old |= *now;
            }
        }
        new
    };
    let mut initial = Vec::new();
    read_dir_files(first, &mut initial)?;
    for data in &initial {
        run(data);
    }
    let mut candidates = Vec::new();
    for dir in others {
        read_dir_files(dir, &mut candidates)?;
    }
    candidates.sort_by_key(Vec::len);
    let (mut files, mut features) = (0, 0);
    for data in &candidates {
        let new = run(data);
        if new == 0 {
            continue;
        }
        let path = first.join(sha1_hex(data));
        if !path.exists() {
            dst_kernel::write_atomic(&path, data)
                .map_err(|e| Failure::new(exit::UNWRITABLE, format!("{}: {e}", path.display())))?;
            files += 1;
        }
        features += new;
    }
    eprintln!(
        "MERGE-OUTER: {} files, {} in the initial corpus; {files} new files with {features} new features added",
        initial.len() + candidates.len(),
        initial.len()
    );
    Ok(exit::OK)
}

fn read_dir_files(dir: &Path, into: &mut Vec<Vec<u8>>) -> Result<(), Failure> {
    let unreadable =
        |e: std::io::Error| Failure::new(exit::BAD_INPUT, format!("{}: {e}", dir.display()));
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(unreadable)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            read_dir_files(&path, into)?;
        } else if path.is_file() {
            into.push(std::fs::read(&path).map_err(unreadable)?);
        }
    }
    Ok(())
}

fn read_zip(path: &Path, into: &mut Vec<Vec<u8>>) -> Result<(), Failure> {
    use std::io::Read;
    let bad = |e: &dyn std::fmt::Display| {
        Failure::new(
            exit::BAD_INPUT,
            format!("{}: not a seed corpus archive: {e}", path.display()),
        )
    };
    let file = std::fs::File::open(path).map_err(|e| bad(&e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| bad(&e))?;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| bad(&e))?;
        if entry.is_dir() {
            continue;
        }
        let mut data = Vec::new();
        entry
            .by_ref()
            .take(MAX_MAX_LEN as u64 * 16)
            .read_to_end(&mut data)
            .map_err(|e| bad(&e))?;
        into.push(data);
    }
    Ok(())
}

fn campaign(
    harness: &Path,
    subject: Subject,
    flags: &Flags,
    corpus_dirs: &[&PathBuf],
    seeds: &[Vec<u8>],
    max_len: usize,
    work: &Path,
) -> Result<i32, Failure> {
    let name = harness
        .file_name()
        .map_or("harness".into(), |n| n.to_string_lossy().into_owned());
    let mut options = Options::new(&name, work);
    crate::store::ensure_dir(&options.corpus_dir).map_err(Failure::from)?;
    // -use_cmp=0: no comparison log (the dictionaries stay).
    options.cmplog = flags.use_cmp != Some(false);
    if let Some(len_control) = flags.len_control {
        options.len_control = len_control;
    }
    options.tokens = super::tokens::from_program(harness);
    // The corpus, then a short string of zeros and each of the harness's
    // own strings as a whole input, so mutation starts from data bytes
    // (not from a random tail's) and from its magic values; each stays
    // (and is written) only if it adds coverage.
    let starts = std::iter::once(vec![0u8; 8]).chain(options.tokens.iter().cloned());
    options.seeds = seeds
        .iter()
        .cloned()
        .chain(starts)
        .map(|seed| lf::encode(&seed[..seed.len().min(max_len)]))
        .collect();
    options.runs = flags.runs.and_then(|r| u64::try_from(r).ok());
    options.time = flags
        .max_total_time
        .filter(|&t| t > 0)
        .map(Duration::from_secs);
    options.seed = flags.seed.unwrap_or(0);
    options.timeout = Duration::from_secs(flags.timeout.unwrap_or(1200).max(1));
    options.stop_on_finding = true;
    options.status = true;
    options.dict = flags.dict.clone().or_else(|| {
        let dict = sibling(harness, ".dict");
        dict.is_file().then_some(dict)
    });
    let output = crate::cli::Output {
        json: false,
        quiet: false,
    };
    let replay = match subject {
        Subject::Program => {
            let cmd = program(harness);
            let exec = cmd.executor(options.timeout)?;
            let catalog = exec.catalog().to_vec();
            let make = cmd.clients(exec, options.timeout);
            crate::cli::campaign(make, &catalog, &options, 1, output).map_err(Failure::from)?;
            format!(
                "cargo dst-fuzz replay {{}} --cmd --defer -- {}",
                harness.display()
            )
        }
        here => {
            let mut exec = executor(harness, here, options.timeout)?;
            let probes = &options.seeds[..options.seeds.len().min(STABILITY_INPUTS)];
            let stability = stability(&mut *exec, probes);
            let forks = if stability < MIN_STABILITY {
                eprintln!(
                    "dst: the harness's coverage is {:.0}% stable over repeated runs of the same inputs (under {:.0}%): it keeps state between runs; fuzzing with a fork per input",
                    stability * 100.0,
                    MIN_STABILITY * 100.0
                );
                drop(exec);
                true
            } else {
                let known =
                    crate::store::known_findings(&options.findings_dir).map_err(Failure::from)?;
                options.stop_on_unconfirmed = true;
                let (_, summary) = crate::cli::campaign_summary(
                    move || Ok(exec),
                    &dst::catalog::sites(),
                    &options,
                    output,
                )
                .map_err(Failure::from)?;
                options.stop_on_unconfirmed = false;
                if summary.unconfirmed > 0 {
                    eprintln!(
                        "dst: a failure did not come back when its input ran again: the harness keeps state between runs; fuzzing again with a fork per input"
                    );
                }
                let unconfirmed = unconfirmed(harness, &options, &known)?;
                for name in &unconfirmed {
                    eprintln!(
                        "dst: the finding {name} does not happen again in a fresh process: the harness keeps state between runs; dropped, and fuzzing again with a fork per input"
                    );
                    let _ = std::fs::remove_dir_all(options.findings_dir.join(name));
                }
                summary.unconfirmed > 0 || !unconfirmed.is_empty()
            };
            if forks {
                // The same campaign through the process executor, on this
                // program, one fork of its server per input.
                let mut exec =
                    program(harness).process_with(options.timeout, dst::catalog::sites())?;
                exec.set_env(dst::forkserver::PERSISTENT_RUNS_ENV, "1");
                crate::cli::campaign_here(exec, &options, output).map_err(Failure::from)?;
            }
            format!("DST_INPUT={{}} {}", harness.display())
        }
    };

    if let Some(first) = corpus_dirs.first() {
        for input in crate::store::load_corpus(&options.corpus_dir).map_err(Failure::from)? {
            let data = lf::decode(&input, max_len);
            let path = first.join(sha1_hex(&data));
            if !path.exists() {
                dst_kernel::write_unsynced(&path, &data).map_err(|e| {
                    Failure::new(exit::UNWRITABLE, format!("{}: {e}", path.display()))
                })?;
            }
        }
    }
    let mut code = exit::OK;
    let found = crate::store::known_findings(&options.findings_dir).map_err(Failure::from)?;
    for finding in found {
        let dir = options.findings_dir.join(&finding);
        let input = std::fs::read(dir.join("input"))
            .map_err(|e| Failure::new(exit::INTERNAL, format!("{}: {e}", dir.display())))?;
        let summary = dst_kernel::finding::read_summary(&dir);
        let timeout = matches!(
            summary.as_ref().map(|s| &s.signature),
            Some(Signature::Timeout)
        );
        let data = lf::decode(&input, max_len);
        let artifact = match &flags.exact_artifact_path {
            Some(path) => path.clone(),
            None => PathBuf::from(format!(
                "{}{}-{}",
                flags.artifact_prefix.as_deref().unwrap_or(""),
                if timeout { "timeout" } else { "crash" },
                sha1_hex(&data)
            )),
        };
        let dst_input = sibling(&artifact, ".dst");
        for (path, bytes) in [(&artifact, &data), (&dst_input, &input)] {
            dst_kernel::write_atomic(path, bytes)
                .map_err(|e| Failure::new(exit::UNWRITABLE, format!("{}: {e}", path.display())))?;
        }
        let what = summary.map_or_else(|| finding.clone(), |s| s.signature.to_string());
        eprintln!("==ERROR: dst: {what}");
        eprintln!(
            "artifact_prefix='{}'; Test unit written to {}",
            flags.artifact_prefix.as_deref().unwrap_or("./"),
            artifact.display()
        );
        eprintln!(
            "dst: every decision of the run is in {}: {}",
            dst_input.display(),
            replay.replace("{}", &dst_input.display().to_string())
        );
        code = if timeout {
            flags.timeout_exit()
        } else {
            flags.crash_exit()
        };
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_are_named_by_sha1_as_libfuzzer_names_them() {
        // sha1("") and sha1("abc"), the standard test vectors.
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(
            sibling(Path::new("out/fuzz_x"), "_seed_corpus.zip"),
            PathBuf::from("out/fuzz_x_seed_corpus.zip")
        );
    }
}
