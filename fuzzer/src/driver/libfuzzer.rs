//! `cargo dst-fuzz libfuzzer HARNESS [-flag=value ...] [DIR ...]`: a
//! libFuzzer command line on a harness built by `cc --libfuzzer` (what the
//! harness runs when started by itself to fuzz), so OSS-Fuzz and
//! ClusterFuzzLite run scripts work unchanged.
//!
//! - Flags as libFuzzer's (`dst::libfuzzer::Flags`), after the
//!   `[libfuzzer]` section of `HARNESS.options`; `-runs`,
//!   `-max_total_time`, `-seed`, `-timeout`, `-max_len` and `-dict` set
//!   the campaign (`HARNESS.dict` is read too, as are the harness's own
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

/// Runs the libFuzzer command line `args` on `harness`.
pub fn libfuzzer(harness: &Path, args: &[String]) -> Result<i32, Failure> {
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
    if flags.help || files {
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

    let work = std::env::temp_dir().join(format!("dst-libfuzzer-{}", std::process::id()));
    let result = campaign(harness, &flags, &corpus_dirs, &seeds, max_len, &work);
    let _ = std::fs::remove_dir_all(&work);
    result
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
    options.tokens = super::tokens::from_program(harness);
    // Besides the corpus: a short string of zeros, and each of the
    // harness's own strings as a whole input, so mutation starts from data
    // bytes (not from a random tail's) and from its magic values; each
    // stays only if it adds coverage.
    let starts = std::iter::once(vec![0u8; 8]).chain(options.tokens.iter().cloned());
    for seed in seeds.iter().cloned().chain(starts) {
        let input = lf::encode(&seed[..seed.len().min(max_len)]);
        let path = options.corpus_dir.join(sha1_hex(&input));
        dst_kernel::write_atomic(&path, &input)
            .map_err(|e| Failure::new(exit::UNWRITABLE, format!("{}: {e}", path.display())))?;
    }
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
    let cmd = CmdArgs {
        cmd: true,
        defer: true,
        command: vec![harness.as_os_str().to_owned()],
    };
    let exec = cmd.executor(options.timeout)?;
    let catalog = exec.catalog().to_vec();
    let make = cmd.clients(exec, options.timeout);
    let output = crate::cli::Output {
        json: false,
        quiet: false,
    };
    crate::cli::campaign(make, &catalog, &options, 1, output).map_err(Failure::from)?;

    if let Some(first) = corpus_dirs.first() {
        for input in crate::store::load_corpus(&options.corpus_dir).map_err(Failure::from)? {
            let data = lf::decode(&input, max_len);
            let path = first.join(sha1_hex(&data));
            if !path.exists() {
                dst_kernel::write_atomic(&path, &data).map_err(|e| {
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
            "dst: every decision of the run is in {}: cargo dst-fuzz replay {} --cmd --defer -- {}",
            dst_input.display(),
            dst_input.display(),
            harness.display()
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
