//! `--kvm GUEST`: exploring, replaying and minimizing a freestanding
//! x86-64 guest (built by `cc --kvm`) in dst's KVM virtual machine.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use dst_executors::Executor;
use dst_executors::kvm::executor::Kvm;

use super::level::{Level, Make, file_stem, shell_words};
use crate::exit;
use crate::exit::Failure;
use crate::store::StoreError;

/// A KVM guest to run in dst's virtual machine.
#[derive(Args, Debug, Clone)]
pub struct KvmArgs {
    /// The target is this guest (an ELF built by `cargo dst-fuzz cc --kvm`).
    #[arg(long, value_name = "GUEST", conflicts_with_all = ["cmd", "wasm", "riscv"])]
    pub kvm: Option<PathBuf>,
}

impl KvmArgs {
    /// The guest as a level, when --kvm is given.
    pub fn level(&self) -> Option<Guest> {
        Some(Guest {
            path: self.kvm.clone()?,
        })
    }
}

/// A KVM guest: explored, replayed and minimized in a VM of this process
/// (each client of a parallel campaign makes its own: a VM belongs to the
/// process that made it).
pub struct Guest {
    path: PathBuf,
}

/// The guest at `path` in a new VM.
fn open(path: &Path, timeout: Duration) -> Result<Kvm, Failure> {
    Kvm::open(path, timeout)
        .map_err(|e| Failure::new(exit::BAD_INPUT, format!("{}: {e}", path.display())))
}

impl Level for Guest {
    fn flag(&self) -> &'static str {
        "--kvm"
    }

    fn name(&self) -> String {
        file_stem(&self.path, "kvm")
    }

    fn target(&self) -> String {
        format!("--kvm {}", shell_words(&[self.path.clone().into()]))
    }

    fn executor(&self, timeout: Duration) -> Result<Box<dyn Executor>, Failure> {
        Ok(Box::new(open(&self.path, timeout)?))
    }

    fn clients(&self, opened: Box<dyn Executor>, timeout: Duration) -> Make {
        drop(opened);
        let path = self.path.clone();
        Box::new(move || {
            open(&path, timeout)
                .map(|e| Box::new(e) as Box<dyn Executor>)
                .map_err(|Failure { code, message }| StoreError::Target { code, message })
        })
    }
}
