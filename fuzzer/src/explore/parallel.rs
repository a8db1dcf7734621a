//! Several clients on several cores: LibAFL's launcher starts them, LLMP
//! shares their inputs, and their campaign parts are merged at the end.

use std::path::{Path, PathBuf};
use std::time::Instant;

use dst::catalog::SiteInfo;
use dst_kernel::{Campaign, Executor, finding};
use libafl::inputs::BytesInput;

use super::client::{State, client};
use super::{Options, Summary, restart};
use crate::store::{self, StoreError};

/// The campaign file of client `id` in a parallel campaign.
fn part_path(campaign_file: &Path, id: usize) -> PathBuf {
    let mut name = campaign_file.as_os_str().to_owned();
    name.push(format!(".client{id}"));
    PathBuf::from(name)
}

/// Folds the client parts left beside `campaign_file` into it (and removes
/// them); returns the merged campaign.
fn merge_parts(
    campaign_file: &Path,
    catalog: &[dst::catalog::SiteInfo],
) -> Result<Campaign, StoreError> {
    let mut campaign = match store::load_campaign(campaign_file)? {
        Some(saved) if saved.catalog == catalog => saved,
        _ => Campaign::new(catalog.to_vec()),
    };
    let dir = campaign_file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let prefix = format!(
        "{}.client",
        campaign_file
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default()
    );
    let mut parts = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.filter_map(|e| e.ok()) {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                parts.push(entry.path());
            }
        }
    }
    parts.sort();
    for part in &parts {
        if let Some(other) = store::load_campaign(part)?
            && other.catalog == catalog
        {
            campaign.merge(&other);
        }
    }
    store::save_campaign(&campaign, campaign_file)?;
    for part in parts {
        let _ = std::fs::remove_file(part);
    }
    Ok(campaign)
}

/// A free TCP port on loopback for the LLMP broker.
fn free_port() -> Result<u16, StoreError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| StoreError::Libafl(format!("no free port for the broker: {e}")))
}

/// Runs a campaign with `jobs` clients through LibAFL's launcher: one
/// broker (this process, which prints the status) and one forked, restarting
/// client per job, sharing new inputs over LLMP. Each client saves its own
/// part of the campaign; the parts are merged at the end.
pub fn explore_parallel<E: Executor + 'static>(
    make: impl FnOnce() -> Result<E, StoreError>,
    catalog: &[SiteInfo],
    options: &Options,
    jobs: usize,
) -> Result<Summary, StoreError> {
    use libafl::events::{ClientDescription, EventConfig, launcher::Launcher};
    use libafl_bolts::core_affinity::{Cores, get_core_ids};
    use libafl_bolts::shmem::{ShMemProvider, StdShMemProvider};
    use std::sync::{Arc, Mutex};

    let started = Instant::now();
    let catalog = catalog.to_vec();
    let executions_before = merge_parts(&options.campaign_file, &catalog)?.executions;
    store::ensure_dir(&options.corpus_dir)?;
    store::ensure_dir(&options.findings_dir)?;
    let findings_before = store::known_findings(&options.findings_dir)?;
    let available = get_core_ids().map_or(1, |ids| ids.len()).max(1);
    let clients = jobs.clamp(1, available);
    if clients < jobs {
        eprintln!(
            "dst-fuzz: --jobs {jobs} exceeds the {available} cores; running {clients} clients"
        );
    }
    let cores = Cores::from((0..clients).collect::<Vec<usize>>());
    let totals = Arc::new(Mutex::new(crate::monitor::Totals::default()));
    let monitor = crate::monitor::StatusMonitor::new(options.status, totals.clone());
    let port = free_port()?;
    let main_pid = std::process::id();
    let shmem = StdShMemProvider::new().map_err(StoreError::libafl)?;
    let client_options = options.clone();
    let client_catalog = catalog.clone();
    let run_client = move |state: Option<State>, mgr, description: ClientDescription| {
        let mut options = client_options;
        // The broker prints the status of all clients.
        options.status = false;
        options.seed = options
            .seed
            .wrapping_add((description.id() as u64).wrapping_mul(0x9E37_79B9));
        let part = part_path(&options.campaign_file, description.id());
        let campaign = Campaign::new(client_catalog);
        restart::die_with_parent();
        let exec = make().map_err(|e| libafl::Error::unknown(e.to_string()))?;
        client(Box::new(exec), &options, state, mgr, campaign, &part)
            .map(|_| ())
            .map_err(|e| libafl::Error::unknown(e.to_string()))
    };
    let result = Launcher::builder()
        .shmem_provider(shmem)
        .configuration(EventConfig::AlwaysUnique)
        .monitor(monitor)
        .run_client(run_client)
        .cores(&cores)
        .broker_port(port)
        .build()
        .launch::<BytesInput, State>();
    if std::process::id() != main_pid {
        // A client or its restarter: its work is saved; leave quietly.
        let code = match &result {
            Ok(()) | Err(libafl::Error::ShuttingDown) => 0,
            Err(e) => {
                eprintln!("dst-fuzz: client error: {e}");
                crate::exit::INTERNAL
            }
        };
        std::process::exit(code);
    }
    match result {
        Ok(()) | Err(libafl::Error::ShuttingDown) => {}
        Err(e) => return Err(StoreError::libafl(e)),
    }
    let campaign = merge_parts(&options.campaign_file, &catalog)?;
    let totals = *totals.lock().unwrap_or_else(|p| p.into_inner());
    let findings = store::known_findings(&options.findings_dir)?
        .difference(&findings_before)
        .filter_map(|name| finding::read_summary(&options.findings_dir.join(name)))
        .collect();
    Ok(Summary {
        executions: campaign.executions - executions_before,
        seconds: started.elapsed().as_secs_f64(),
        corpus: store::load_corpus(&options.corpus_dir)?.len(),
        edges: totals.edges as usize,
        findings,
        campaign,
    })
}
