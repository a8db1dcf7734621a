//! A target's level, when the driver runs the target's executor itself:
//! one trait, [`Level`], that each level implements in its own file
//! (`--cmd` a program through its fork server, `--wasm` a module, `--riscv`
//! a program on the emulator, `--kvm` a guest), and one selection path,
//! [`super::Levels::selected`], that every command takes: `run`, `ci` in
//! each mode, `replay`, `minimize`, `report` and `catalog`. A target of the
//! fuzz crate has no level here: its own binary runs its executor, and the
//! driver calls it.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use dst::catalog::SiteInfo;
use dst_executors::Executor;

use super::build::FuzzCrate;
use crate::args::CampaignArgs;
use crate::ci::batch;
use crate::exit::Failure;
use crate::explore::Options;
use crate::store::StoreError;

/// How a campaign's client gets its executor: called in the client (after
/// the fork, in a parallel campaign).
pub type Make = Box<dyn FnOnce() -> Result<Box<dyn Executor>, StoreError>>;

/// What the driver asks of a level: its target opened as an executor, the
/// target's catalog, its files' name and the flags that name it again.
pub trait Level {
    /// The flag that selects the level (`--wasm`), for messages.
    fn flag(&self) -> &'static str;

    /// The default name of the target's files (in the fuzz crate's corpus,
    /// findings and campaigns folders): the target's file name.
    fn name(&self) -> String;

    /// The flags that name the target again, for a finding's replay
    /// command: `--wasm module.wasm`.
    fn target(&self) -> String;

    /// An executor for the target. A target that is not what it claims (a
    /// file that is no module, an ELF for another machine) is one line
    /// with its exit status.
    fn executor(&self, timeout: Duration) -> Result<Box<dyn Executor>, Failure>;

    /// The target's catalog, without exploring it: by default the opened
    /// executor's.
    fn catalog(&self) -> Result<Vec<SiteInfo>, Failure> {
        Ok(self.executor(Duration::from_secs(1))?.catalog().to_vec())
    }

    /// How each client of a campaign gets its executor, given `opened`
    /// here (so a bad target is one line before any campaign): by default
    /// `opened` itself, which a forked client inherits. A level whose
    /// executor belongs to the process that made it (a VM, a shared-memory
    /// segment and its fork server) opens a new one in each client.
    fn clients(&self, opened: Box<dyn Executor>, timeout: Duration) -> Make {
        let _ = timeout;
        Box::new(move || Ok(opened))
    }

    /// A campaign's options for the target's files under `name`: the
    /// campaign flags, the target's [`Level::tokens`], and findings that
    /// say how to replay them (and, with a [`Level::debugger`], how to
    /// debug them).
    fn options(&self, fuzz: &FuzzCrate, name: &str, args: &CampaignArgs) -> Options {
        let mut options = args.options(
            name,
            fuzz.corpus(name),
            fuzz.findings(name),
            fuzz.campaign(name),
        );
        options.tokens = self.tokens();
        let mut reproduce = serde_json::json!({
            "explain": format!("cargo dst-fuzz replay {{input}} {}", self.target()),
        });
        if let Some(debugger) = self.debugger() {
            reproduce["debugger"] = debugger.into();
        }
        options.reproduce = Some(reproduce);
        options
    }

    /// Tokens for the explorer's token mutators: none by default.
    fn tokens(&self) -> Vec<Vec<u8>> {
        Vec::new()
    }

    /// A command line that runs a finding (`{input}`) under a debugger,
    /// where the level has one.
    fn debugger(&self) -> Option<String> {
        None
    }

    /// The targets `ci --mode batch` runs, one code-change job each; `None`
    /// when the level has no batch (one target is given, not several).
    fn batch(&self) -> Option<Vec<batch::Target>> {
        None
    }
}

/// A file's name without its extension, or `fallback`.
pub fn file_stem(path: &Path, fallback: &str) -> String {
    path.file_stem()
        .map_or_else(|| fallback.into(), |s| s.to_string_lossy().into_owned())
}

/// `words` quoted for a shell, joined by spaces.
pub fn shell_words(words: &[OsString]) -> String {
    words
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

/// ` -- WORDS` for a target's arguments, or nothing when it has none.
pub fn after_dashes(args: &[OsString]) -> String {
    if args.is_empty() {
        String::new()
    } else {
        format!(" -- {}", shell_words(args))
    }
}
