//! The flags a campaign, a replay and a minimization take, defined once:
//! a target binary's `fuzz`, `replay` and `minimize` and `cargo dst-fuzz`'s
//! `run`, `replay` and `minimize` flatten the same structs, so both show
//! the same help, and the driver hands them to a target binary through
//! [`CampaignArgs::to_args`] and its siblings, which write back exactly
//! what was parsed.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::explore::{DEFAULT_SHRINK_BUDGET, DEFAULT_TIMEOUT_MS, Net, Options};

/// Parses a command line (`args`, the program's name first); when it is
/// wrong, or asks for help, prints what clap says and returns the exit
/// status: [`crate::exit::USAGE`] for a mistake, [`crate::exit::OK`] for help.
pub fn parse<P, I, T>(args: I) -> Result<P, i32>
where
    P: clap::Parser,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    P::try_parse_from(args).map_err(|err| {
        let _ = err.print();
        if err.use_stderr() {
            crate::exit::USAGE
        } else {
            crate::exit::OK
        }
    })
}

/// Parses `500ms`, `30s`, `5m`, `2h`, or plain seconds (and whole
/// nanoseconds, `1500000ns`, as the driver passes durations on).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((text, "s"), |i| text.split_at(i));
    if unit == "ns" {
        return number
            .parse()
            .map(Duration::from_nanos)
            .map_err(|_| format!("{text:?} is not a whole number of nanoseconds"));
    }
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 30s, 5m or 1h"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("{text:?} is not a duration like 30s, 5m or 1h"));
    }
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?} (use ms, s, m or h)"
            ));
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text:?}: {e}"))
}

/// `--listen`: a port (on loopback) or an address and port.
pub fn parse_listen(text: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse()
        .map_err(|_| format!("{text:?} is not PORT or ADDR:PORT (e.g. 7000, 0.0.0.0:7000)"))
}

/// `--join`: a host name or address, a colon, a port.
pub fn parse_join(text: &str) -> Result<String, String> {
    match text.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => {
            Ok(text.to_string())
        }
        _ => Err(format!("{text:?} is not HOST:PORT (e.g. 10.0.0.5:7000)")),
    }
}

/// A duration as [`parse_duration`] reads it back, exactly.
fn duration_arg(duration: Duration) -> String {
    format!("{}ns", duration.as_nanos())
}

/// How long a campaign runs and what it prints.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct CampaignArgs {
    /// Stop after this many executions (per client with --jobs).
    #[arg(long)]
    pub runs: Option<u64>,
    /// Stop after this long (e.g. 30s, 5m, 1h).
    #[arg(long, value_parser = parse_duration)]
    pub time: Option<Duration>,
    /// Seed of the explorer's own randomness (fixed by default, so that a
    /// campaign repeats).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Per-run time limit in milliseconds; a run past it is a timeout
    /// finding.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_MS)]
    pub timeout_ms: u64,
    /// Runs the shrinker may spend per finding (failures that hang or kill
    /// the process: at most 100).
    #[arg(long, default_value_t = DEFAULT_SHRINK_BUDGET)]
    pub shrink_budget: u64,
    /// Stop at the first finding (as libFuzzer does), instead of exploring
    /// on.
    #[arg(long)]
    pub stop_on_finding: bool,
    /// Clients exploring in parallel (LibAFL's launcher and LLMP; at most
    /// one per core).
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Let other machines join this campaign (`--join HOST:PORT` on them):
    /// PORT listens on loopback only, ADDR:PORT on that address (a trusted
    /// network or an SSH tunnel: LLMP has no authentication). Port 0 picks
    /// a free one and prints it.
    #[arg(long, value_name = "[ADDR:]PORT", value_parser = parse_listen, conflicts_with = "join")]
    pub listen: Option<std::net::SocketAddr>,
    /// Join the campaign of the node listening at HOST:PORT: new inputs and
    /// findings travel both ways; if it cannot be reached, explore alone and
    /// retry every 5 seconds.
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_join)]
    pub join: Option<String>,
    /// End with one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// No status lines and no summary on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// A dictionary for the token mutators (AFL's and libFuzzer's format:
    /// `name="value"` lines).
    #[arg(long, value_name = "FILE")]
    pub dict: Option<PathBuf>,
    /// No comparison feedback (the comparison log and input-to-state
    /// replacement; tokens stay), as libFuzzer's -use_cmp=0.
    #[arg(long)]
    pub no_cmplog: bool,
}

impl CampaignArgs {
    /// The options of a campaign named `name` keeping its files in the
    /// given places.
    pub fn options(
        &self,
        name: &str,
        corpus_dir: PathBuf,
        findings_dir: PathBuf,
        campaign_file: PathBuf,
    ) -> Options {
        Options {
            runs: self.runs,
            time: self.time,
            seed: self.seed,
            corpus_dir,
            findings_dir,
            campaign_file,
            timeout: Duration::from_millis(self.timeout_ms),
            status: !self.quiet,
            shrink_budget: self.shrink_budget,
            stop_on_finding: self.stop_on_finding,
            dict: self.dict.clone(),
            cmplog: !self.no_cmplog,
            net: match (self.listen, &self.join) {
                (Some(addr), _) => Some(Net::Listen(addr)),
                (None, Some(peer)) => Some(Net::Join(peer.clone())),
                (None, None) => None,
            },
            ..Options::new(name, std::path::Path::new("."))
        }
    }

    /// The flags that parse back into `self`.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<String> = Vec::new();
        if let Some(runs) = self.runs {
            args.extend(["--runs".into(), runs.to_string()]);
        }
        if let Some(time) = self.time {
            args.extend(["--time".into(), duration_arg(time)]);
        }
        args.extend([
            "--seed".into(),
            self.seed.to_string(),
            "--timeout-ms".into(),
            self.timeout_ms.to_string(),
            "--shrink-budget".into(),
            self.shrink_budget.to_string(),
            "--jobs".into(),
            self.jobs.to_string(),
        ]);
        for (flag, on) in [
            ("--stop-on-finding", self.stop_on_finding),
            ("--json", self.json),
            ("--quiet", self.quiet),
            ("--no-cmplog", self.no_cmplog),
        ] {
            if on {
                args.push(flag.into());
            }
        }
        if let Some(addr) = self.listen {
            args.extend(["--listen".into(), addr.to_string()]);
        }
        if let Some(peer) = &self.join {
            args.extend(["--join".into(), peer.clone()]);
        }
        let mut args: Vec<OsString> = args.into_iter().map(OsString::from).collect();
        if let Some(dict) = &self.dict {
            args.extend(["--dict".into(), dict.clone().into_os_string()]);
        }
        args
    }
}

/// How a replay runs and prints.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct ReplayArgs {
    /// Print the run as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Per-run time limit in milliseconds.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_MS)]
    pub timeout_ms: u64,
}

impl ReplayArgs {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// The flags that parse back into `self`.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> =
            vec!["--timeout-ms".into(), self.timeout_ms.to_string().into()];
        if self.json {
            args.push("--json".into());
        }
        args
    }
}

/// How a minimization runs.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct MinimizeArgs {
    /// Where to write the result (default: FILE.min).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Runs the shrinker may spend.
    #[arg(long, default_value_t = DEFAULT_SHRINK_BUDGET)]
    pub budget: u64,
    /// Per-run time limit in milliseconds.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_MS)]
    pub timeout_ms: u64,
}

impl MinimizeArgs {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// The flags that parse back into `self`.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "--budget".into(),
            self.budget.to_string().into(),
            "--timeout-ms".into(),
            self.timeout_ms.to_string().into(),
        ];
        if let Some(out) = &self.out {
            args.extend(["--out".into(), out.clone().into_os_string()]);
        }
        args
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser, Debug)]
    struct Campaign {
        #[command(flatten)]
        args: CampaignArgs,
    }

    #[derive(Parser, Debug)]
    struct Replay {
        #[command(flatten)]
        args: ReplayArgs,
    }

    #[derive(Parser, Debug)]
    struct Minimize {
        #[command(flatten)]
        args: MinimizeArgs,
    }

    fn parse<P: Parser>(flags: &[&str]) -> P {
        P::try_parse_from(std::iter::once("prog").chain(flags.iter().copied()))
            .unwrap_or_else(|e| panic!("{flags:?}: {e}"))
    }

    fn reparse<P: Parser>(args: Vec<OsString>) -> P {
        P::try_parse_from(std::iter::once(OsString::from("prog")).chain(args)).unwrap()
    }

    #[test]
    fn campaign_flags_survive_the_trip_to_a_target_binary() {
        for flags in [
            &[][..],
            &["--runs", "7", "--time", "1.5s", "--seed", "3", "--quiet"][..],
            &[
                "--time",
                "250ms",
                "--timeout-ms",
                "20",
                "--shrink-budget",
                "5",
            ][..],
            &["--stop-on-finding", "--json", "--jobs", "2", "--time", "2h"][..],
            &["--listen", "7000"][..],
            &["--listen", "0.0.0.0:7001", "--jobs", "2"][..],
            &["--join", "node-a.example:7000"][..],
        ] {
            let first: Campaign = parse(flags);
            let again: Campaign = reparse(first.args.to_args());
            assert_eq!(first.args, again.args, "{flags:?}");
        }
        let defaults: Campaign = parse(&[]);
        assert_eq!(defaults.args.timeout_ms, DEFAULT_TIMEOUT_MS);
        assert_eq!(defaults.args.shrink_budget, DEFAULT_SHRINK_BUDGET);
        assert_eq!(defaults.args.time, None);
    }

    #[test]
    fn replay_and_minimize_flags_survive_the_trip() {
        let first: Replay = parse(&["--json", "--timeout-ms", "5000"]);
        assert_eq!(first.args.timeout(), Duration::from_secs(5));
        assert_eq!(first.args, reparse::<Replay>(first.args.to_args()).args);
        let first: Minimize = parse(&["--out", "x.min", "--budget", "9", "--timeout-ms", "3"]);
        assert_eq!(first.args, reparse::<Minimize>(first.args.to_args()).args);
    }

    #[test]
    fn network_flags() {
        let parsed: Campaign = parse(&["--listen", "7000"]);
        assert_eq!(parsed.args.listen, Some("127.0.0.1:7000".parse().unwrap()));
        let options = parsed
            .args
            .options("t", "c".into(), "f".into(), "k.json".into());
        assert_eq!(
            options.net,
            Some(Net::Listen("127.0.0.1:7000".parse().unwrap()))
        );
        let parsed: Campaign = parse(&["--join", "[::1]:7000"]);
        assert_eq!(parsed.args.join.as_deref(), Some("[::1]:7000"));
        for wrong in [
            &["--listen", "7000", "--join", "h:1"][..],
            &["--listen", "host"][..],
            &["--join", "host"][..],
            &["--join", ":7000"][..],
            &["--join", "host:0"][..],
        ] {
            let args = std::iter::once("prog").chain(wrong.iter().copied());
            assert!(Campaign::try_parse_from(args).is_err(), "{wrong:?}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1500000ns"), Ok(Duration::from_micros(1500)));
        assert!(parse_duration("1.5ns").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn options_follow_the_flags() {
        let parsed: Campaign = parse(&["--runs", "10", "--timeout-ms", "50", "--quiet"]);
        let options = parsed
            .args
            .options("t", "c".into(), "f".into(), "k.json".into());
        assert_eq!(options.runs, Some(10));
        assert_eq!(options.timeout, Duration::from_millis(50));
        assert!(!options.status);
        assert_eq!(options.findings_dir, PathBuf::from("f"));
        assert_eq!(options.reproduce, None);
    }
}
