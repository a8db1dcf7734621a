//! `--riscv PROGRAM`: exploring, replaying and minimizing a static riscv64
//! Linux program on the emulator; `--cluster FILE`: a cluster of them
//! (`dst_executors::riscv::cluster`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use dst_executors::Executor;
use dst_executors::riscv::cluster::Cluster;
use dst_executors::riscv::executor::{DEFAULT_BUDGET, Emulator};

use super::level::{Level, after_dashes, shell_words};
use crate::exit;
use crate::exit::Failure;

/// A static riscv64 Linux program to run on dst's emulator.
#[derive(Args, Debug, Clone)]
pub struct RiscvArgs {
    /// The target is this static riscv64 Linux program (RV64GC), its
    /// arguments after `--`.
    #[arg(long, value_name = "PROGRAM", conflicts_with_all = ["cmd", "wasm"])]
    pub riscv: Option<PathBuf>,
    /// The target is the cluster this file names: nodes, each a static
    /// riscv64 program with its arguments, environment and files, over a
    /// simulated network (TOML: `[[node]]` with `name`, `program`, `args`,
    /// `env`, `files`, `workload`, `faults`; `[network]`).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cmd", "wasm", "riscv"])]
    pub cluster: Option<PathBuf>,
    /// Instructions a riscv run may execute (a cluster's: across its
    /// nodes); past them it is a timeout finding (the same on every
    /// replay).
    #[arg(long, default_value_t = DEFAULT_BUDGET)]
    pub instructions: u64,
    /// The program's file system is a copy of this folder (its working
    /// directory, `/`; the folder is never written), else empty.
    #[arg(long, value_name = "DIR", requires = "riscv")]
    pub files: Option<PathBuf>,
}

impl RiscvArgs {
    /// The cluster as a level, when --cluster is given.
    pub fn cluster_level(&self) -> Option<ClusterFile> {
        let path = self.cluster.clone()?;
        let name = path
            .file_stem()
            .map_or_else(|| "cluster".into(), |s| s.to_string_lossy().into_owned());
        Some(ClusterFile {
            path,
            name,
            instructions: self.instructions,
        })
    }

    /// The program as a level, with `args` after its name, when --riscv is
    /// given.
    pub fn level(&self, args: &[OsString]) -> Option<Program> {
        let path = self.riscv.clone()?;
        // Its file name, not its stem: `prog.elf`'s files stay where they
        // were.
        let name = path
            .file_name()
            .map_or_else(|| "riscv".into(), |s| s.to_string_lossy().into_owned());
        Some(Program {
            path,
            name,
            args: args.to_vec(),
            instructions: self.instructions,
            files: self.files.clone(),
        })
    }
}

/// A static riscv64 Linux program and its command line: explored,
/// replayed and minimized in this process, on the emulator.
pub struct Program {
    path: PathBuf,
    name: String,
    args: Vec<OsString>,
    instructions: u64,
    files: Option<PathBuf>,
}

impl Level for Program {
    fn flag(&self) -> &'static str {
        "--riscv"
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    /// With its instruction budget when it is not the default, and the
    /// program's arguments.
    fn target(&self) -> String {
        let mut flags = format!("--riscv {}", shell_words(&[self.path.clone().into()]));
        if self.instructions != DEFAULT_BUDGET {
            flags += &format!(" --instructions {}", self.instructions);
        }
        if let Some(files) = &self.files {
            flags += &format!(" --files {}", shell_words(&[files.clone().into()]));
        }
        flags + &after_dashes(&self.args)
    }

    fn executor(&self, _timeout: Duration) -> Result<Box<dyn Executor>, Failure> {
        let mut argv = vec![self.name.clone()];
        argv.extend(self.args.iter().map(|a| a.to_string_lossy().into_owned()));
        Emulator::open_with(&self.path, &argv, self.instructions, self.files.as_deref())
            .map(|e| Box::new(e) as Box<dyn Executor>)
            .map_err(|e| Failure::new(exit::BAD_INPUT, format!("{}: {e}", self.path.display())))
    }
}

/// A cluster file: its nodes explored, replayed and minimized in this
/// process, on the emulator.
pub struct ClusterFile {
    path: PathBuf,
    name: String,
    instructions: u64,
}

impl Level for ClusterFile {
    fn flag(&self) -> &'static str {
        "--cluster"
    }

    /// The file's stem: `register.toml`'s files are `register`'s.
    fn name(&self) -> String {
        self.name.clone()
    }

    fn target(&self) -> String {
        let mut flags = format!("--cluster {}", shell_words(&[self.path.clone().into()]));
        if self.instructions != DEFAULT_BUDGET {
            flags += &format!(" --instructions {}", self.instructions);
        }
        flags
    }

    fn executor(&self, _timeout: Duration) -> Result<Box<dyn Executor>, Failure> {
        Cluster::open(&self.path, self.instructions)
            .map(|c| Box::new(c) as Box<dyn Executor>)
            .map_err(|e| Failure::new(exit::BAD_INPUT, format!("{}: {e}", self.path.display())))
    }
}
