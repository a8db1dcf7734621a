//! Several clients on several cores: LibAFL's launcher starts them, LLMP
//! shares their inputs, and their campaign parts are merged at the end.

use std::path::{Path, PathBuf};
use std::time::Instant;

use dst::catalog::SiteInfo;
use dst_kernel::{Campaign, Executor, finding};
use libafl::inputs::BytesInput;

use super::State;
use super::client::client;
use super::net::{self, Bridge, Net, Parent, Peers};
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
        .map_err(|e| StoreError::Broker(format!("no free port for the broker: {e}")))
}

/// Runs a campaign with `jobs` clients through LibAFL's launcher: one
/// broker (this process, which prints the status) and one forked, restarting
/// client per job, sharing new inputs over LLMP. Each client saves its own
/// part of the campaign; the parts are merged at the end. With
/// `options.net`, the broker also links this node to other machines
/// (`net`).
pub fn explore_parallel<E: Executor + 'static>(
    make: impl FnOnce() -> Result<E, StoreError>,
    catalog: &[SiteInfo],
    options: &Options,
    jobs: usize,
) -> Result<Summary, StoreError> {
    use libafl::events::{
        ClientDescription, EventConfig, ManagerKind, ShouldSaveState, launcher::Launcher,
        setup_restarting_mgr_llmp,
    };
    use libafl_bolts::core_affinity::{Cores, get_core_ids};
    use libafl_bolts::shmem::{ShMemProvider, StdShMemProvider};
    use libafl_bolts::tuples::tuple_list;
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
    // Before any fork: a port that cannot be bound is the command's error.
    let public = match &options.net {
        Some(Net::Listen(addr)) => {
            let listener = std::net::TcpListener::bind(addr)
                .map_err(|e| StoreError::Broker(format!("cannot listen on {addr}: {e}")))?;
            let bound = listener
                .local_addr()
                .map_err(|e| StoreError::Broker(format!("cannot listen on {addr}: {e}")))?;
            eprintln!(
                "dst-fuzz: listening on {bound}: other machines join with --join HOST:{}",
                bound.port()
            );
            Some(listener)
        }
        _ => None,
    };
    // Nodes of one campaign must not all search alike.
    let salt = match options.net {
        Some(_) => net::node_salt(),
        None => 0,
    };
    let cores = Cores::from(restart::cores_for(clients));
    let totals = Arc::new(Mutex::new(crate::explore::monitor::Totals::default()));
    let nodes = Arc::new(crate::explore::monitor::Nodes::default());
    let mut monitor = crate::explore::monitor::StatusMonitor::new(options.status, totals.clone());
    if options.net.is_some() {
        monitor = monitor.with_nodes(nodes.clone());
    }
    let port = free_port()?;
    let main_pid = std::process::id();
    let shmem = StdShMemProvider::new().map_err(StoreError::libafl)?;
    let restarters = restart::Restarters::new(clients)
        .map_err(|e| StoreError::Broker(format!("no shared page for the restarters: {e}")))?;
    let client_options = options.clone();
    let client_catalog = catalog.clone();
    let run_client = move |state: Option<State>, mgr, description: ClientDescription| {
        let mut options = client_options;
        // The broker prints the status of all clients.
        options.status = false;
        options.seed =
            (options.seed ^ salt).wrapping_add((description.id() as u64).wrapping_mul(0x9E37_79B9));
        let part = part_path(&options.campaign_file, description.id());
        let campaign = Campaign::new(client_catalog);
        restart::die_with_parent();
        let exec = make().map_err(|e| libafl::Error::unknown(e.to_string()))?;
        match client(Box::new(exec), &options, state, mgr, campaign, &part) {
            Ok(_) => Ok(()),
            Err(e) if e.is_shutdown() => Err(libafl::Error::shutting_down()),
            Err(e) => Err(libafl::Error::unknown(e.to_string())),
        }
    };
    let identity = net::campaign_identity(&options.name, &catalog);
    let mut public = public;
    let broker_shmem = shmem.clone();
    let spawn_mgr = |_: &_, description: Option<ClientDescription>, monitor: Option<_>| {
        match description {
            Some(description) => {
                // This is the client's restarter: it goes with the node.
                restarters.record(description.id());
                restart::die_with_parent();
                let takes = net::TakeFindings::new(description.id(), clients);
                setup_restarting_mgr_llmp(
                    broker_shmem.clone(),
                    EventConfig::AlwaysUnique,
                    None::<crate::explore::monitor::StatusMonitor>,
                    port,
                    ManagerKind::Client {
                        client_description: description,
                    },
                    None,
                    ShouldSaveState::OnRestart,
                    tuple_list!(takes),
                )
            }
            None => {
                let monitor = monitor.expect("the launcher hands the broker its monitor");
                run_broker(
                    broker_shmem.clone(),
                    monitor,
                    port,
                    clients,
                    &identity,
                    options.net.as_ref(),
                    public.take(),
                    &restarters,
                    options.stop_on_finding,
                    &nodes,
                    &totals,
                )?;
                Err(libafl::Error::shutting_down())
            }
        }
    };
    let result = Launcher::builder()
        .shmem_provider(shmem)
        .configuration(EventConfig::AlwaysUnique)
        .monitor(monitor)
        .run_client(run_client)
        .cores(&cores)
        .broker_port(port)
        .build()
        .launch_with_manager(spawn_mgr);
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
        // Counted by each client, not reported across them.
        unconfirmed: 0,
    })
}

/// The node's broker: LLMP's broker with the [`Bridge`] before LibAFL's
/// standard hook, heartbeats, the link to a hub or the public listener, and
/// dst's exit rule: every restarter has exited (with `--stop-on-finding`,
/// one: a client stopped at a finding, and the node stops with it), or
/// SIGINT/SIGTERM.
#[allow(clippy::too_many_arguments)]
fn run_broker<SP, MT>(
    shmem: SP,
    monitor: MT,
    port: u16,
    clients: usize,
    identity: &str,
    net: Option<&Net>,
    public: Option<std::net::TcpListener>,
    restarters: &restart::Restarters,
    stop_on_finding: bool,
    nodes: &crate::explore::monitor::Nodes,
    totals: &std::sync::Mutex<crate::explore::monitor::Totals>,
) -> Result<(), libafl::Error>
where
    SP: libafl_bolts::shmem::ShMemProvider,
    MT: libafl::monitors::Monitor,
{
    use libafl::events::StdLlmpEventHook;
    use libafl_bolts::llmp::{Broker, Listener, LlmpBroker, Tag};
    use libafl_bolts::tuples::tuple_list;
    use std::time::Duration;

    /// LLMP's "broker exiting" tag (private in ll_mp 0.16.1, pinned).
    const EXITING: Tag = Tag(0x13C5171);
    restart::stop_on_signals();
    let peers = Peers::new(identity);
    let bridge = Bridge {
        peers: peers.clone(),
    };
    let mut broker = LlmpBroker::create_attach_to_tcp(
        shmem,
        tuple_list!(bridge, StdLlmpEventHook::<BytesInput, MT>::new(monitor)?),
        port,
    )?;
    let name = net::node_name();
    let beat = || {
        // This node's executions so far, as its status line counts them.
        let executions = totals.lock().map_or(0, |t| t.executions);
        net::beat(identity, &name, executions)
    };
    // The first message of this broker's history: who it is, for a link
    // that replays the history from its start.
    broker.send_buf(net::BEAT, &beat())?;
    // Local clients register before any link, so that their ids and the
    // links' stay apart (LibAFL issue #2428).
    let deadline = Instant::now() + Duration::from_secs(60);
    while broker.num_clients_seen() < 1 + clients && !restart::stopping() {
        broker.broker_once()?;
        if Instant::now() > deadline {
            eprintln!(
                "dst-fuzz: not every client started within 60s; going on with those that did"
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if let Some(listener) = public {
        broker
            .inner_mut()
            .launch_listener(Listener::Tcp(listener))?;
    }
    let mut parent = match net {
        Some(Net::Join(peer)) => Some(Parent::new(peer)),
        _ => None,
    };
    let mut last_beat = Instant::now();
    let mut last_message = Instant::now();
    let done = || {
        if stop_on_finding {
            restarters.any_exited()
        } else {
            restarters.all_exited()
        }
    };
    while !restart::stopping() && !broker.is_shutting_down() && !done() {
        if broker.broker_once()? {
            last_message = Instant::now();
        }
        if last_beat.elapsed() >= Duration::from_secs(1) {
            last_beat = Instant::now();
            broker.send_buf(net::BEAT, &beat())?;
            peers.borrow_mut().report_gone();
            let peers = peers.borrow();
            nodes
                .live
                .store(peers.live(), std::sync::atomic::Ordering::Relaxed);
            let rate = peers.exec_per_sec() as u64;
            nodes
                .exec_per_sec
                .store(rate, std::sync::atomic::Ordering::Relaxed);
        }
        if last_message.elapsed() >= Duration::from_secs(30) {
            last_message = Instant::now();
            broker.on_timeout()?;
        }
        if let Some(parent) = &mut parent {
            parent.tend(broker.inner_mut(), &peers.borrow());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    broker.send_buf(EXITING, &[])?;
    Ok(())
}
