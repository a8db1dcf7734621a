//! `--wasm MODULE`: exploring, replaying and minimizing a WebAssembly
//! module (`.wasm`, or `.wat` text) through the wasm executor.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use dst_executors::Executor;
use dst_executors::wasm::{DEFAULT_FUEL, LoadError, Missing, Options as WasmOptions, Wasm};

use super::level::{Level, after_dashes, file_stem, shell_words};
use crate::exit;
use crate::exit::Failure;

/// Whether `path` is a WebAssembly module: a `.wasm` or `.wat` file, or a
/// file that starts with wasm's magic bytes.
pub fn is_module(path: &std::path::Path) -> bool {
    let by_name = path.extension().is_some_and(|e| e == "wasm" || e == "wat");
    let by_magic = || {
        use std::io::Read;
        let mut magic = [0u8; 4];
        std::fs::File::open(path)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok_and(|()| &magic == b"\0asm")
    };
    path.is_file() && (by_name || by_magic())
}

/// What an import dst does not provide becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum MissingArg {
    /// The module is refused, every missing import named.
    #[default]
    Refuse,
    /// Missing functions return WASI's ENOSYS.
    Enosys,
}

/// A WebAssembly module to explore in dst's interpreter.
#[derive(Args, Debug, Clone)]
pub struct WasmArgs {
    /// The target is this WebAssembly module (wasm32-wasip1; `.wasm` or
    /// `.wat`), its arguments after `--`.
    #[arg(long, value_name = "MODULE", conflicts_with = "cmd")]
    pub wasm: Option<PathBuf>,
    /// Instructions a wasm run may execute; past them it is a timeout
    /// finding (the same on every replay).
    #[arg(long, default_value_t = DEFAULT_FUEL)]
    pub fuel: u64,
    /// What an import dst does not provide becomes: refuse the module, or
    /// enosys (missing functions return ENOSYS).
    #[arg(long, value_enum, default_value_t = MissingArg::Refuse)]
    pub wasi_missing: MissingArg,
    /// An environment variable the module sees (`environ_get`), the same in
    /// every run; repeatable. The module sees no other.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = env_var, requires = "wasm")]
    pub env: Vec<String>,
}

/// `KEY=VALUE`, with a nonempty key.
fn env_var(text: &str) -> Result<String, String> {
    match text.split_once('=') {
        Some((key, _)) if !key.is_empty() => Ok(text.to_string()),
        _ => Err(format!("{text:?} is not KEY=VALUE")),
    }
}

impl WasmArgs {
    /// The module as a level, with `args` as its command line, when
    /// --wasm is given.
    pub fn level(&self, args: &[OsString]) -> Option<Module> {
        Some(Module {
            path: self.wasm.clone()?,
            flags: self.clone(),
            args: args.to_vec(),
        })
    }
}

/// A WebAssembly module and its command line: explored, replayed and
/// minimized in this process, over the interpreter.
pub struct Module {
    path: PathBuf,
    flags: WasmArgs,
    args: Vec<OsString>,
}

impl Module {
    /// The wasm executor for the module.
    pub fn open(&self) -> Result<Wasm, Failure> {
        let options = WasmOptions {
            args: self
                .args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            fuel: self.flags.fuel,
            env: self.flags.env.clone(),
            missing: match self.flags.wasi_missing {
                MissingArg::Refuse => Missing::Refuse,
                MissingArg::Enosys => Missing::Enosys,
            },
            ..WasmOptions::default()
        };
        let path = &self.path;
        Wasm::load(path, options).map_err(|e| match e {
            LoadError::BadModule(m) => {
                Failure::new(exit::BAD_INPUT, format!("{}: {m}", path.display()))
            }
            LoadError::StartFailed(m) => {
                Failure::new(exit::SETUP_FAILED, format!("{}: {m}", path.display()))
            }
        })
    }
}

impl Level for Module {
    fn flag(&self) -> &'static str {
        "--wasm"
    }

    fn name(&self) -> String {
        file_stem(&self.path, "wasm")
    }

    /// With every flag that changes a run, and the module's arguments.
    fn target(&self) -> String {
        let mut flags = format!("--wasm {}", shell_words(&[self.path.clone().into()]));
        if self.flags.fuel != DEFAULT_FUEL {
            flags += &format!(" --fuel {}", self.flags.fuel);
        }
        if self.flags.wasi_missing == MissingArg::Enosys {
            flags += " --wasi-missing enosys";
        }
        for var in &self.flags.env {
            flags += &format!(" --env {}", shell_words(&[var.into()]));
        }
        flags + &after_dashes(&self.args)
    }

    fn executor(&self, _timeout: Duration) -> Result<Box<dyn Executor>, Failure> {
        Ok(Box::new(self.open()?))
    }
}
