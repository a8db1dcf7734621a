//! libFuzzer compatibility: the bytes a libFuzzer-style harness gets, and
//! libFuzzer's command line.
//!
//! A harness (`LLVMFuzzerTestOneInput` in C, linked by `cargo dst-fuzz cc
//! --libfuzzer`; `dst_fuzz::fuzz_target!` in Rust) takes a byte string. Under
//! dst that string is two decisions, so a run stays a pure function of its
//! input and the harness's bytes sit beside every other decision of the code
//! under test (its faults, its threads):
//!
//! | decision | bytes | value |
//! |---|---|---|
//! | length, site `libFuzzer input length` | 4 | big-endian, modulo `max_len + 1` |
//! | data, site `libFuzzer input bytes` | the length | the bytes |
//!
//! So the nominal input is the empty string, and [`encode`] turns a
//! libFuzzer corpus file into a dst input (zero seed, its length, its
//! bytes) that [`decode`] turns back, as long as it is at most `max_len`
//! long. `max_len` is [`MAX_LEN_ENV`] (set by the driver from `-max_len`),
//! else [`DEFAULT_MAX_LEN`].
//!
//! [`Flags`] reads libFuzzer's flags (`-name=value`, and inputs) and the
//! `[libfuzzer]` section of a ClusterFuzz `.options` file; libdst's `main`
//! and `cargo dst-fuzz libfuzzer` share it. Parsed by hand: a handful of
//! `-name=value` words, in libFuzzer's own syntax, which no argument
//! parser speaks.

use std::path::PathBuf;

use crate::decision::{Kind, Value};
use crate::runtime::{SiteText, decide_text};

/// The largest harness input, as the driver passes `-max_len` on.
pub const MAX_LEN_ENV: &str = "DST_LIBFUZZER_MAX_LEN";
/// libFuzzer's own default when the corpus does not say.
pub const DEFAULT_MAX_LEN: usize = 4096;
/// The site of the length decision.
pub const LENGTH_SITE: &str = "libFuzzer input length";
/// The site of the data decision.
pub const BYTES_SITE: &str = "libFuzzer input bytes";
/// Bytes of the length decision.
pub const LENGTH_BYTES: usize = 4;

/// `max_len` of this process ([`MAX_LEN_ENV`] or [`DEFAULT_MAX_LEN`]).
pub fn max_len() -> usize {
    std::env::var(MAX_LEN_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(DEFAULT_MAX_LEN)
}

/// The harness's bytes for this run: two decisions (see the module doc).
pub fn input(max_len: usize) -> Vec<u8> {
    let mut length = [0u8; LENGTH_BYTES];
    let n = decide_text(
        Kind::Length,
        SiteText::named(LENGTH_SITE),
        &mut length,
        Value::Mod(max_len as u64 + 1),
    ) as usize;
    debug_assert!(n <= max_len);
    let mut data = vec![0u8; n];
    if n > 0 {
        decide_text(
            Kind::Fill,
            SiteText::named(BYTES_SITE),
            &mut data,
            Value::Hash,
        );
    }
    data
}

/// The dst input whose harness bytes are `data` (at most `max_len` of
/// them reach the harness).
pub fn encode(data: &[u8]) -> Vec<u8> {
    let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    let mut input = vec![0u8; crate::decision::SEED_BYTES];
    input.extend_from_slice(&len.to_be_bytes());
    input.extend_from_slice(&data[..len as usize]);
    input
}

/// The harness bytes a run of `input` gets (the inverse of [`encode`]).
pub fn decode(input: &[u8], max_len: usize) -> Vec<u8> {
    let mut stream = crate::decision::Stream::new(crate::decision::tail_seed(input));
    let mut length = [0u8; LENGTH_BYTES];
    stream.read(input, &mut length);
    let n = Value::Mod(max_len as u64 + 1).of(&length) as usize;
    let mut data = vec![0u8; n];
    stream.read(input, &mut data);
    data
}

/// libFuzzer's flags, as far as dst reads them; `None`: not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    /// `-runs`: individual runs (`-1`: no limit).
    pub runs: Option<i64>,
    /// `-max_total_time`, seconds (0: no limit).
    pub max_total_time: Option<u64>,
    /// `-seed` (0: the explorer's default).
    pub seed: Option<u64>,
    /// `-max_len` (0: guessed from the corpus).
    pub max_len: Option<usize>,
    /// `-timeout`, seconds per run.
    pub timeout: Option<u64>,
    /// `-dict`.
    pub dict: Option<PathBuf>,
    /// `-artifact_prefix`.
    pub artifact_prefix: Option<String>,
    /// `-exact_artifact_path`.
    pub exact_artifact_path: Option<PathBuf>,
    /// `-error_exitcode` (default [`ERROR_EXITCODE`]).
    pub error_exitcode: Option<i32>,
    /// `-timeout_exitcode` (default [`TIMEOUT_EXITCODE`]).
    pub timeout_exitcode: Option<i32>,
    /// `-len_control` (0: no length control).
    pub len_control: Option<u64>,
    /// `-use_cmp` (default on): comparison feedback, here the comparison
    /// log (`crate::cmplog`) and input-to-state replacement.
    pub use_cmp: Option<bool>,
    /// `-help=1`.
    pub help: bool,
    /// `-merge=1`: the files of the second and later folders that add
    /// coverage go into the first.
    pub merge: bool,
    /// Corpus directories and input files, in order.
    pub inputs: Vec<PathBuf>,
    /// libFuzzer flags dst accepts and does not act on (`-jobs`,
    /// `-workers`, `-print_final_stats`, ...), as given.
    pub ignored: Vec<String>,
    /// Flags libFuzzer does not have either, as given (libFuzzer warns).
    pub unknown: Vec<String>,
}

/// libFuzzer's exit status for a crash.
pub const ERROR_EXITCODE: i32 = 77;
/// libFuzzer's exit status for a timeout.
pub const TIMEOUT_EXITCODE: i32 = 70;

/// Flags that libFuzzer has and dst takes without acting on them.
const IGNORED: &[&str] = &[
    "verbosity",
    "jobs",
    "workers",
    "reload",
    "print_final_stats",
    "print_pcs",
    "print_coverage",
    "close_fd_mask",
    "rss_limit_mb",
    "malloc_limit_mb",
    "detect_leaks",
    "use_value_profile",
    "only_ascii",
    "reduce_inputs",
    "shrink",
    "prefer_small",
    "mutate_depth",
    "shuffle",
    "keep_seed",
    "fork",
    "entropic",
    "handle_segv",
    "handle_abrt",
    "handle_bus",
    "handle_ill",
    "handle_fpe",
    "handle_int",
    "handle_term",
    "handle_xfsz",
    "handle_usr1",
    "handle_usr2",
    "report_slow_units",
    "dump_coverage",
    "exit_on_item",
    "ignore_crashes",
    "ignore_timeouts",
    "ignore_ooms",
    "merge_control_file",
];

/// A flag with a value it cannot take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagError(pub String);

impl std::fmt::Display for FlagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FlagError {}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, FlagError> {
    value
        .trim()
        .parse()
        .map_err(|_| FlagError(format!("-{name}={}: not a number", value.escape_debug())))
}

impl Flags {
    /// Parses a command line (without the program's name).
    pub fn parse<I, S>(args: I) -> Result<Flags, FlagError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut flags = Flags::default();
        flags.add_args(args)?;
        Ok(flags)
    }

    /// Adds a command line's flags and inputs (later flags win, as in
    /// libFuzzer). After `-ignore_remaining_args=1` nothing is read.
    pub fn add_args<I, S>(&mut self, args: I) -> Result<(), FlagError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for arg in args {
            let arg = arg.as_ref();
            let Some(flag) = arg.strip_prefix('-') else {
                self.inputs.push(PathBuf::from(arg));
                continue;
            };
            let Some((name, value)) = flag.split_once('=') else {
                // libFuzzer takes only -name=value; a bare -name is unknown.
                self.unknown.push(arg.to_string());
                continue;
            };
            if name == "ignore_remaining_args" && value.trim() == "1" {
                break;
            }
            self.set(name, value, arg)?;
        }
        Ok(())
    }

    /// Sets one flag; `arg` is how it was written.
    fn set(&mut self, name: &str, value: &str, arg: &str) -> Result<(), FlagError> {
        match name {
            "runs" => self.runs = Some(number(name, value)?),
            "max_total_time" => self.max_total_time = Some(number(name, value)?),
            "seed" => self.seed = Some(number(name, value)?),
            "max_len" => self.max_len = Some(number(name, value)?),
            "len_control" => self.len_control = Some(number(name, value)?),
            "timeout" => self.timeout = Some(number(name, value)?),
            "error_exitcode" => self.error_exitcode = Some(number(name, value)?),
            "timeout_exitcode" => self.timeout_exitcode = Some(number(name, value)?),
            "help" => self.help = value.trim() != "0",
            "merge" => self.merge = value.trim() != "0",
            "use_cmp" => self.use_cmp = Some(value.trim() != "0"),
            "dict" => self.dict = Some(PathBuf::from(value)),
            "artifact_prefix" => self.artifact_prefix = Some(value.to_string()),
            "exact_artifact_path" => self.exact_artifact_path = Some(PathBuf::from(value)),
            _ if IGNORED.contains(&name) => self.ignored.push(arg.to_string()),
            _ => self.unknown.push(arg.to_string()),
        }
        Ok(())
    }

    /// Adds the `[libfuzzer]` section of a ClusterFuzz `.options` file
    /// (`name = value` lines; `#` and `;` start comments; other sections
    /// are skipped). A malformed line is an error naming its number.
    pub fn add_options(&mut self, text: &str) -> Result<(), FlagError> {
        let mut in_section = false;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(section) = line.strip_prefix('[') {
                let Some(section) = section.strip_suffix(']') else {
                    return Err(FlagError(format!("line {}: unclosed section", i + 1)));
                };
                in_section = section.trim() == "libfuzzer";
                continue;
            }
            if !in_section {
                continue;
            }
            let Some((name, value)) = line.split_once('=') else {
                return Err(FlagError(format!(
                    "line {}: expected name = value, found {line:?}",
                    i + 1
                )));
            };
            let (name, value) = (name.trim(), value.trim());
            self.set(name, value, &format!("-{name}={value}"))?;
        }
        Ok(())
    }

    /// The exit status for a crash.
    pub fn crash_exit(&self) -> i32 {
        self.error_exitcode.unwrap_or(ERROR_EXITCODE)
    }

    /// The exit status for a timeout.
    pub fn timeout_exit(&self) -> i32 {
        self.timeout_exitcode.unwrap_or(TIMEOUT_EXITCODE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_flag_is_one_line() {
        // Found by dst's own libfuzzer_flags target.
        let error = Flags::parse(["-runs=1\n2"]).unwrap_err().to_string();
        assert_eq!(error, "-runs=1\\n2: not a number");
    }

    #[test]
    fn flags_and_inputs_are_read_as_libfuzzer_reads_them() {
        let flags = Flags::parse([
            "-runs=100",
            "-max_total_time=30",
            "corpus",
            "-seed=7",
            "-max_len=64",
            "-timeout=5",
            "-dict=x.dict",
            "-artifact_prefix=out/",
            "-exact_artifact_path=crash.bin",
            "-jobs=4",
            "-no_such=1",
            "-runs",
            "seeds/a",
            "-error_exitcode=9",
            "-use_cmp=0",
        ])
        .unwrap();
        assert_eq!(flags.runs, Some(100));
        assert_eq!(flags.max_total_time, Some(30));
        assert_eq!(flags.seed, Some(7));
        assert_eq!(flags.max_len, Some(64));
        assert_eq!(flags.timeout, Some(5));
        assert_eq!(flags.dict, Some(PathBuf::from("x.dict")));
        assert_eq!(flags.artifact_prefix.as_deref(), Some("out/"));
        assert_eq!(flags.exact_artifact_path, Some(PathBuf::from("crash.bin")));
        assert_eq!(
            flags.inputs,
            [PathBuf::from("corpus"), PathBuf::from("seeds/a")]
        );
        assert_eq!(flags.ignored, ["-jobs=4"]);
        assert_eq!(flags.unknown, ["-no_such=1", "-runs"]);
        assert_eq!(flags.crash_exit(), 9);
        assert_eq!(flags.use_cmp, Some(false));
        assert_eq!(flags.timeout_exit(), TIMEOUT_EXITCODE);
        let err = Flags::parse(["-runs=lots"]).unwrap_err();
        assert_eq!(err.0, "-runs=lots: not a number");
        let rest = Flags::parse(["-ignore_remaining_args=1", "-runs=3", "dir"]).unwrap();
        assert_eq!(rest, Flags::default());
    }

    #[test]
    fn the_libfuzzer_section_of_an_options_file_is_read_and_the_command_line_wins() {
        let mut flags = Flags::default();
        flags
            .add_options(
                "# ClusterFuzz\n[asan]\ndetect_leaks = 0\n\n[libfuzzer]\nmax_len = 128\n\
                 dict = fmt.dict\n; comment\ntimeout=25\n",
            )
            .unwrap();
        flags.add_args(["-timeout=3"]).unwrap();
        assert_eq!(flags.max_len, Some(128));
        assert_eq!(flags.dict, Some(PathBuf::from("fmt.dict")));
        assert_eq!(flags.timeout, Some(3));
        assert!(
            flags.ignored.is_empty(),
            "the asan section is not libFuzzer's"
        );
        let err = Flags::default()
            .add_options("[libfuzzer]\nmax_len\n")
            .unwrap_err();
        assert!(err.0.starts_with("line 2:"), "{err}");
        let err = Flags::default().add_options("[libfuzzer\n").unwrap_err();
        assert!(err.0.contains("unclosed"), "{err}");
    }

    #[test]
    fn encoded_data_decodes_to_itself_and_the_nominal_input_is_empty() {
        for data in [&b""[..], b"A", b"FUZZ\x00\xff", &[7u8; 4096]] {
            assert_eq!(decode(&encode(data), 4096), data);
        }
        assert_eq!(decode(&[], 4096), b"");
        assert_eq!(decode(&[0; 40], 4096), b"");
        // Longer than max_len: the length wraps, as the decision reads it.
        assert_eq!(decode(&encode(&[1; 5]), 4).len(), 0);
        // A random tail gives bytes too, the same every time.
        let random = 9u64.to_le_bytes();
        assert_eq!(decode(&random, 64), decode(&random, 64));
        assert!(decode(&random, 64).len() <= 64);
    }
}
