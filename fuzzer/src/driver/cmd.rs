//! `--cmd`: exploring, replaying and minimizing another program (a C or
//! C++ service linking libdst, or any binary using the SDK) through the
//! process executor.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use dst::catalog::SiteInfo;
use dst_executors::Executor;

use super::level::{Level, Make, file_stem, shell_words};
use crate::ci::batch;
use crate::exit;
use crate::exit::Failure;
use crate::store::StoreError;

/// A program to explore in its own process, over shared memory.
#[derive(Args, Debug, Clone)]
pub struct CmdArgs {
    /// The target is the program after `--`, run through its fork server.
    #[arg(long)]
    pub cmd: bool,
    /// Start the fork server at dst_setup_complete (DST_DEFER=1), so setup
    /// runs once.
    #[arg(long, requires = "cmd")]
    pub defer: bool,
    /// The program and its arguments.
    #[arg(last = true)]
    pub command: Vec<OsString>,
}

impl CmdArgs {
    /// The program as a level, when --cmd is given.
    pub fn level(&self) -> Option<CmdArgs> {
        self.cmd.then(|| self.clone())
    }

    /// The executor for the program, given its catalog (read once).
    pub fn process_with(
        &self,
        timeout: Duration,
        catalog: Vec<dst::catalog::SiteInfo>,
    ) -> Result<dst_executors::Process, Failure> {
        let (program, args) = self.program()?;
        let mut exec = dst_executors::Process::with_catalog(&program, args, timeout, catalog)
            .map_err(|e| Failure::new(exit::BAD_INPUT, e))?;
        exec.set_defer(self.defer);
        Ok(exec)
    }

    /// The program (found on PATH if need be) and its arguments.
    pub fn program(&self) -> Result<(PathBuf, &[OsString]), Failure> {
        let Some((program, args)) = self.command.split_first() else {
            return Err(Failure::new(
                exit::USAGE,
                "--cmd needs the program after `--`: --cmd -- ./service ARGS",
            ));
        };
        Ok((which(Path::new(program))?, args))
    }
}

/// `program` as given when it names a file, else found on PATH.
pub fn which(program: &Path) -> Result<PathBuf, Failure> {
    if program.components().count() > 1 || program.is_file() {
        return Ok(program.to_path_buf());
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Failure::new(
                exit::USAGE,
                format!("no program {} on PATH", program.display()),
            )
        })
}

impl Level for CmdArgs {
    fn flag(&self) -> &'static str {
        "--cmd"
    }

    /// The program's file name.
    fn name(&self) -> String {
        self.command
            .first()
            .map_or_else(|| "cmd".into(), |p| file_stem(Path::new(p), "cmd"))
    }

    fn target(&self) -> String {
        let defer = if self.defer { " --defer" } else { "" };
        format!("--cmd{defer} -- {}", shell_words(&self.command))
    }

    fn executor(&self, timeout: Duration) -> Result<Box<dyn Executor>, Failure> {
        Ok(Box::new(self.process_with(timeout, self.catalog()?)?))
    }

    /// Its dst_catalog section, or asked of a Rust binary: the program
    /// does not run.
    fn catalog(&self) -> Result<Vec<SiteInfo>, Failure> {
        dst_executors::elf::program_catalog(&self.program()?.0)
            .map_err(|e| Failure::new(exit::BAD_INPUT, e))
    }

    /// Each client makes its own executor: its own segment and fork server.
    fn clients(&self, opened: Box<dyn Executor>, timeout: Duration) -> Make {
        let catalog = opened.catalog().to_vec();
        drop(opened);
        let cmd = self.clone();
        Box::new(move || {
            cmd.process_with(timeout, catalog)
                .map(|e| Box::new(e) as Box<dyn Executor>)
                .map_err(|Failure { code, message }| StoreError::Target { code, message })
        })
    }

    /// The program's own strings (`cc --libfuzzer` puts them in a section).
    fn tokens(&self) -> Vec<Vec<u8>> {
        self.command
            .first()
            .map(|program| super::tokens::from_program(Path::new(program)))
            .unwrap_or_default()
    }

    /// The program under gdb, with the finding as its input.
    fn debugger(&self) -> Option<String> {
        Some(format!(
            "DST_INPUT={{input}} gdb --args {}",
            shell_words(&self.command)
        ))
    }

    /// Each program after `--`, without arguments.
    fn batch(&self) -> Option<Vec<batch::Target>> {
        Some(
            self.command
                .iter()
                .map(|p| batch::Target::program(Path::new(p), self.defer))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::CampaignArgs;
    use crate::driver::build::FuzzCrate;

    fn cmd(words: &[&str], defer: bool) -> CmdArgs {
        CmdArgs {
            cmd: true,
            defer,
            command: words.iter().map(OsString::from).collect(),
        }
    }

    #[test]
    fn command_lines_are_quoted_for_a_shell() {
        let c = cmd(&["./kv", "--port=7", "a b", "it's"], false);
        assert_eq!(shell_words(&c.command), "./kv --port=7 'a b' 'it'\\''s'");
        assert_eq!(c.name(), "kv");
        assert_eq!(cmd(&[], false).name(), "cmd");
    }

    #[test]
    fn a_cmd_campaign_says_how_to_replay_its_findings() {
        use clap::Parser;
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            args: CampaignArgs,
        }
        let flags = Flags::parse_from(["x", "--runs", "5", "--shrink-budget", "7"]);
        let fuzz = FuzzCrate {
            dir: PathBuf::from("fz"),
        };
        let options = cmd(&["./kv", "-q"], true).options(&fuzz, "kv", &flags.args);
        assert_eq!(options.runs, Some(5));
        assert_eq!(options.shrink_budget, 7, "the flag, not a fixed budget");
        assert_eq!(options.corpus_dir, PathBuf::from("fz/corpus/kv"));
        assert_eq!(options.campaign_file, PathBuf::from("fz/campaigns/kv.json"));
        let reproduce = options.reproduce.expect("a template");
        assert_eq!(
            reproduce["explain"],
            "cargo dst-fuzz replay {input} --cmd --defer -- ./kv -q"
        );
        assert_eq!(
            reproduce["debugger"],
            "DST_INPUT={input} gdb --args ./kv -q"
        );
    }

    #[test]
    fn a_program_is_found_on_path_or_taken_as_given() {
        assert_eq!(
            which(Path::new("./no/such")).unwrap(),
            PathBuf::from("./no/such")
        );
        let sh = which(Path::new("sh")).expect("sh is on PATH");
        assert!(sh.is_absolute() && sh.is_file());
        let failure = which(Path::new("no-such-program-dst")).unwrap_err();
        assert_eq!(failure.code, exit::USAGE);
    }
}
