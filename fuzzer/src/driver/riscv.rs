//! `--riscv PROGRAM`: exploring, replaying and minimizing a static riscv64
//! Linux program on the emulator.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use dst_executors::riscv::executor::{DEFAULT_BUDGET, Emulator};

use super::Failure;
use super::build::FuzzCrate;
use crate::args::CampaignArgs;
use crate::exit;

/// A static riscv64 Linux program to run on dst's emulator.
#[derive(Args, Debug, Clone)]
pub struct RiscvArgs {
    /// The target is this static riscv64 Linux program (RV64GC), its
    /// arguments after `--`.
    #[arg(long, value_name = "PROGRAM", conflicts_with_all = ["cmd", "wasm"])]
    pub riscv: Option<PathBuf>,
    /// Instructions a riscv run may execute; past them it is a timeout
    /// finding (the same on every replay).
    #[arg(long, default_value_t = DEFAULT_BUDGET)]
    pub instructions: u64,
}

impl RiscvArgs {
    /// The program's default name for its files: its file name.
    pub fn name(&self) -> String {
        self.riscv
            .as_ref()
            .and_then(|p| p.file_name())
            .map_or_else(|| "riscv".into(), |s| s.to_string_lossy().into_owned())
    }

    /// The emulator for the program with `args` after its name, when
    /// --riscv is given.
    pub fn executor(&self, args: &[OsString]) -> Result<Option<Emulator>, Failure> {
        let Some(path) = &self.riscv else {
            return Ok(None);
        };
        let mut argv = vec![self.name()];
        argv.extend(args.iter().map(|a| a.to_string_lossy().into_owned()));
        Emulator::open(path, &argv, self.instructions)
            .map(Some)
            .map_err(|e| (exit::BAD_INPUT, format!("{}: {e}", path.display())))
    }
}

/// `run --riscv`: the explorer loop in this process, over the emulator.
pub fn run(
    fuzz: &FuzzCrate,
    name: &str,
    riscv: &RiscvArgs,
    program_args: &[OsString],
    args: &CampaignArgs,
) -> Result<i32, Failure> {
    let exec = riscv.executor(program_args)?.expect("--riscv was given");
    let program = riscv.riscv.as_ref().expect("--riscv was given");
    super::explore_here(
        fuzz,
        name,
        exec,
        &format!("--riscv {}", program.display()),
        args,
    )
}
