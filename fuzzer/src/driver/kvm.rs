//! `--kvm GUEST`: exploring, replaying and minimizing a freestanding
//! x86-64 guest (built by `cc --kvm`) in dst's KVM virtual machine.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use dst_executors::Executor as _;
use dst_executors::kvm::executor::Kvm;

use super::Failure;
use super::build::FuzzCrate;
use crate::args::CampaignArgs;
use crate::exit;

/// A KVM guest to run in dst's virtual machine.
#[derive(Args, Debug, Clone)]
pub struct KvmArgs {
    /// The target is this guest (an ELF built by `cargo dst-fuzz cc --kvm`).
    #[arg(long, value_name = "GUEST", conflicts_with_all = ["cmd", "wasm", "riscv"])]
    pub kvm: Option<PathBuf>,
}

impl KvmArgs {
    /// The guest's default name for its files: its file name.
    pub fn name(&self) -> String {
        self.kvm
            .as_ref()
            .and_then(|p| p.file_stem())
            .map_or_else(|| "kvm".into(), |s| s.to_string_lossy().into_owned())
    }

    /// The executor for the guest, when --kvm is given.
    pub fn executor(&self, timeout: Duration) -> Result<Option<Kvm>, Failure> {
        let Some(path) = &self.kvm else {
            return Ok(None);
        };
        Kvm::open(path, timeout)
            .map(Some)
            .map_err(|e| (exit::BAD_INPUT, format!("{}: {e}", path.display())))
    }
}

/// `run --kvm`: the explorer loop over the guest; each client of a
/// parallel campaign makes its own VM (a VM belongs to the process that
/// made it).
pub fn run(
    fuzz: &FuzzCrate,
    name: &str,
    kvm: &KvmArgs,
    args: &CampaignArgs,
) -> Result<i32, Failure> {
    let timeout = std::time::Duration::from_millis(args.timeout_ms);
    // Opened here once, so a bad guest is one line before any campaign.
    let catalog = kvm
        .executor(timeout)?
        .expect("--kvm was given")
        .catalog()
        .to_vec();
    let path = kvm.kvm.clone().expect("--kvm was given");
    let make = move || {
        Kvm::open(&path, timeout).map_err(|e| crate::store::StoreError::Target {
            code: exit::BAD_INPUT,
            message: format!("{}: {e}", path.display()),
        })
    };
    let guest = kvm.kvm.as_ref().expect("--kvm was given");
    super::explore_with(
        fuzz,
        name,
        make,
        &catalog,
        &format!("--kvm {}", guest.display()),
        args,
    )
}
