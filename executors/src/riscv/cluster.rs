//! A cluster: several static riscv64 Linux programs, each a node with its
//! own address space, file system and address, in one run, one
//! instruction stream at a time across all of them, over a simulated
//! network with the world's latency and faults.
//!
//! The cluster file (TOML, [`Config`]) names the nodes:
//!
//! ```toml
//! [[node]]
//! name = "server"        # its host name, in every node's /etc/hosts
//! program = "server"     # a static riscv64 program (relative to this file)
//! args = ["7000"]        # after argv[0], the node's name
//! env = { MODE = "fast" }
//! files = "server-data"  # a host folder: the node's file system (a copy)
//! faults = false         # never crashed (default: it may be)
//!
//! [[node]]
//! name = "client"
//! program = "client"
//! args = ["server", "7000"]
//! workload = true        # the run ends when every workload node exited
//!
//! [network]
//! latency_us = 100       # every packet's nominal latency
//! max_delay_us = 10000   # what a delayed packet may take on top
//!
//! [check]
//! history = "/history.jsonl"  # what workloads append to (JSON lines)
//! model = "register"          # register, kv, queue or set
//!
//! [stop]
//! term = true            # SIGTERM to the other nodes once the workload is done
//! grace_ms = 1000        # then the time they have to exit
//!
//! [faults]
//! period_ms = 100        # the nemesis's rounds, in virtual time (0: none)
//! partitions = true      # a round may cut links (healed 1-8 rounds later)
//! pauses = true          # a round may pause a node whose faults are on
//! max_skew_ms = 0        # a node's realtime clock offset, either way
//! ```
//!
//! Node `i` has the address 10.0.0.`i+1`; every node's `/etc/hosts` names
//! them all (unless its own files bring one). Each node is an [`Emulator`]
//! (loaded once, restored before every run); its machine runs with
//! `Threads::idle_exit`, so when all of its threads wait it stops and the
//! cluster decides what happens next:
//!
//! - **Which node runs** is a `schedule` decision among the nodes that can
//!   run (nominally the next one after the node that ran last, round
//!   robin), and a node runs for at most a slice of [`SLICE`] instructions.
//! - **Time** is one virtual clock for the cluster: a node's machine takes
//!   it when it runs and advances it (a nanosecond per instruction, clock
//!   steps); when no node can run it jumps to the next packet's arrival or
//!   the earliest deadline of a waiting thread.
//! - **Packets** a node's sockets send to another node's address
//!   (`crate::linux::net`) take the world's latency, and may be delayed
//!   (`sim: message delayed`: reordered for datagrams, in order for a
//!   stream, which TCP keeps); datagrams may be dropped or duplicated.
//! - **The nemesis** (`dst::world::nemesis`): every `period_ms` of virtual
//!   time a round may partition the network (one node isolated, two
//!   sides, or one direction of one link: a stream's packets on a cut link
//!   wait for the heal, as TCP retransmits; datagrams are lost) and pause
//!   a node whose `faults` are on (it does not run; what arrives waits in
//!   its kernel), each healed after 1 to 8 rounds. A node's realtime
//!   clock may be offset by up to `max_skew_ms` (decided per run).
//! - **Crashes**: a node whose `faults` are on may crash where the world
//!   decides (`sim: node crash`, before a call that changes or syncs its
//!   files, or before it exits), losing what its file system had not made
//!   durable; it restarts from its program's start, and its peers'
//!   connections to it are reset.
//!
//! **Histories as properties**: with a `[check]` section, the file it
//! names belongs to the world in every node (each write durable at once:
//! a crash loses no line), and at the end of every run that ended
//! otherwise well the lines of every node's file are checked for
//! linearizability against the model (`dst-oracles`): a violation is the
//! cluster's own property (`Always`, last in its catalog), failing with
//! the explanation (the operations that cannot be ordered) as details.
//!
//! The run ends when every workload node has exited (or, with none, when
//! every node has), or when nothing can happen any more: every thread of
//! every node waits for ever, which is the deadlock property while a
//! workload node has not exited. A node's nonzero exit, a signal or a call
//! the kernel lacks is a finding naming the node.

use std::cell::UnsafeCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dst::catalog::SiteInfo;
use dst::decision::{Kind, Value};
use dst::protocol::SiteText;
use dst::region::{FLAG_EVENTS, FLAG_TRACE_SITES, Layout, Region, RegionRef};
use dst_kernel::executor::region_map;
use dst_kernel::{Coverage, End, Executor, Map};
use serde::Deserialize;

use super::executor::Emulator;
use super::machine::{Exit, syscall_name};
use crate::guest::Recorder;
use crate::linux::net::{Addr, Packet, ipv4};

/// Instructions a node runs before another may (when another can).
pub const SLICE: u64 = super::threads::QUANTUM;

/// The signal a stop sends ([`StopConfig::term`]).
const SIGTERM: i32 = 15;

/// Bytes of the edge map (shared by the nodes).
const EDGES: usize = 1 << 16;

/// A cluster file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub node: Vec<NodeConfig>,
    #[serde(default)]
    pub network: NetworkConfig,
    #[serde(default)]
    pub faults: FaultsConfig,
    /// Histories to check at the end of every run.
    pub check: Option<CheckConfig>,
    #[serde(default)]
    pub stop: StopConfig,
}

/// The `[stop]` of a cluster file: how the nodes that are not the
/// workload stop when it is done.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopConfig {
    /// Whether they get SIGTERM, as a service manager stops a service,
    /// and the run goes on until they exit or their grace ends (else the
    /// run ends with the workload). Exiting with status 0 or 143 (128 +
    /// SIGTERM) or by SIGTERM's default action is an orderly stop; any
    /// other end is a finding. The grace is virtual time: a node that
    /// computes through it meets the run's instruction budget first (a
    /// timeout finding).
    #[serde(default)]
    pub term: bool,
    /// Virtual milliseconds they have to exit (then they are killed, as
    /// SIGKILL after a grace period; no finding).
    #[serde(default = "grace_ms")]
    pub grace_ms: u64,
}

fn grace_ms() -> u64 {
    1000
}

/// The `[check]` of a cluster file: a history the workload writes, and
/// the model it must be linearizable against.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckConfig {
    /// The history's path in each node's file system (JSON lines, the
    /// format `dst-oracles` reads, each line with its `time`): the file
    /// belongs to the world, every write to it durable at once, and the
    /// lines of every node's file are checked together.
    pub history: String,
    /// `register`, `kv`, `queue` or `set`.
    pub model: String,
}

/// The `[faults]` of a cluster file: the nemesis's rounds.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultsConfig {
    /// Virtual milliseconds between two rounds of the nemesis (0: none).
    #[serde(default = "period_ms")]
    pub period_ms: u64,
    /// Whether a round may partition the network (heals after 1 to 8
    /// rounds; a stream's packets wait for the heal, datagrams are lost).
    #[serde(default = "yes")]
    pub partitions: bool,
    /// Whether a round may pause a node whose `faults` are on (it runs
    /// again after 1 to 8 rounds).
    #[serde(default = "yes")]
    pub pauses: bool,
    /// The largest offset of a node's realtime clock, either way, in
    /// milliseconds (decided per node and run; 0: no skew).
    #[serde(default)]
    pub max_skew_ms: u64,
}

fn period_ms() -> u64 {
    100
}

impl Default for FaultsConfig {
    fn default() -> FaultsConfig {
        FaultsConfig {
            period_ms: period_ms(),
            partitions: true,
            pauses: true,
            max_skew_ms: 0,
        }
    }
}

/// One `[[node]]` of a cluster file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Its host name.
    pub name: String,
    /// Its program (relative to the cluster file's folder).
    pub program: PathBuf,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A host folder whose copy is the node's file system.
    pub files: Option<PathBuf>,
    /// The run ends when every workload node has exited.
    #[serde(default)]
    pub workload: bool,
    /// Whether the world may crash the node.
    #[serde(default = "yes")]
    pub faults: bool,
}

fn yes() -> bool {
    true
}

/// The `[network]` of a cluster file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// Every packet's nominal latency, in microseconds.
    #[serde(default = "latency_us")]
    pub latency_us: u64,
    /// How much longer a delayed packet may take, in microseconds.
    #[serde(default = "max_delay_us")]
    pub max_delay_us: u64,
}

fn latency_us() -> u64 {
    100
}

fn max_delay_us() -> u64 {
    10_000
}

impl Default for NetworkConfig {
    fn default() -> NetworkConfig {
        NetworkConfig {
            latency_us: latency_us(),
            max_delay_us: max_delay_us(),
        }
    }
}

impl Config {
    /// Reads the cluster file at `path`; its programs and folders are
    /// resolved against the file's folder. Why it is not a cluster is one
    /// line.
    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
        let mut config: Config = toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map_or(0, |span| text[..span.start].matches('\n').count() + 1);
            let message = e.message().trim().replace('\n', " ");
            format!("not a cluster file: line {line}: {message}")
        })?;
        let folder = path.parent().unwrap_or(Path::new("."));
        for node in &mut config.node {
            node.program = folder.join(&node.program);
            if let Some(files) = &node.files {
                node.files = Some(folder.join(files));
            }
        }
        config.check()?;
        Ok(config)
    }

    /// Names unique and usable as host names, and a node at least.
    fn check(&self) -> Result<(), String> {
        if let Some(check) = &self.check {
            check.model.parse::<dst_oracles::ModelName>()?;
            if !check.history.starts_with('/') {
                return Err(format!(
                    "[check] history {:?}: an absolute path in the nodes' file systems",
                    check.history
                ));
            }
        }
        if self.node.is_empty() {
            return Err("a cluster needs a [[node]] at least".into());
        }
        if self.node.len() > 250 {
            return Err("a cluster has at most 250 nodes".into());
        }
        for (i, node) in self.node.iter().enumerate() {
            let valid = !node.name.is_empty()
                && node
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
            if !valid {
                return Err(format!(
                    "node name {:?}: letters, digits, - and . only",
                    node.name
                ));
            }
            if self.node[..i].iter().any(|n| n.name == node.name) {
                return Err(format!("two nodes are named {}", node.name));
            }
        }
        Ok(())
    }
}

/// Where a node is between its slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ready,
    /// Every thread waits: for a packet, or until this virtual time.
    Idle(Option<u64>),
    Exited,
}

struct Node {
    name: String,
    ip: [u8; 16],
    emulator: Emulator,
    state: State,
    workload: bool,
}

/// What is on its way to a node.
#[derive(Clone)]
enum Cargo {
    Packet(Packet),
    /// The node at this address crashed: its connections are reset.
    Reset([u8; 16]),
}

/// Something on its way: where it goes.
#[derive(Clone)]
struct Flight {
    from: usize,
    to: usize,
    cargo: Cargo,
}

/// What a nemesis round did, undone later.
#[derive(Clone, Copy)]
enum Heal {
    Partition(u64),
    Pause,
}

/// Where every run starts: the nodes' machines and the network's state
/// (the snapshot after setup).
struct Start {
    machines: Vec<super::machine::Machine>,
    states: Vec<State>,
    now: u64,
    flights: BTreeMap<(u64, u64), Flight>,
    last: BTreeMap<(usize, usize), u64>,
    sent: u64,
    current: usize,
}

/// A history every run is checked against: its path, model and property.
struct History {
    path: String,
    model: dst_oracles::ModelName,
    /// The property's index in the cluster's catalog.
    index: usize,
}

/// The nemesis's state in a run: cut links, paused nodes, what heals when.
#[derive(Default)]
struct Nemesis {
    links: dst::world::net::Links,
    /// Stream packets waiting for a cut link to heal, in the order sent.
    held: Vec<Flight>,
    /// Until when each node is paused (0: not).
    paused: Vec<u64>,
    /// What heals at which time (time, order).
    heals: BTreeMap<(u64, u64), Heal>,
    /// The next round's time (`u64::MAX`: none).
    next_round: u64,
    rounds: u64,
}

/// A cluster of programs on the emulator behind the one executor trait;
/// see the module docs.
pub struct Cluster {
    nodes: Vec<Node>,
    region: Arc<Region>,
    /// The run's one recorder: in the running node's machine while it
    /// runs, here otherwise.
    recorder: Recorder,
    catalog: Vec<SiteInfo>,
    budget: u64,
    latency: u64,
    max_delay: u64,
    edges: Box<[UnsafeCell<u8>]>,
    flags: u64,
    backstop: Duration,
    /// The run's virtual time.
    now: u64,
    /// Packets in flight by (arrival, order sent).
    flights: BTreeMap<(u64, u64), Flight>,
    sent: u64,
    /// The last arrival on each directed link (streams keep their order).
    last: BTreeMap<(usize, usize), u64>,
    /// The node that ran last.
    current: usize,
    /// Instructions the run has executed, across its nodes.
    used: u64,
    /// Where runs start.
    start: Start,
    faults: FaultsConfig,
    /// The history to check after each run.
    history: Option<History>,
    /// Which nodes may be paused (their `faults` are on).
    pausable: Vec<bool>,
    nemesis: Nemesis,
    /// While the cluster sets up: which nodes have been idle once.
    setting_up: Option<Vec<bool>>,
    stop: StopConfig,
    /// Once the workload is done and the others got SIGTERM: until when
    /// they may run.
    stopping: Option<u64>,
}

impl Cluster {
    /// The cluster of `config`, each run at most `budget` instructions
    /// across its nodes. A program that is missing or not a static riscv64
    /// one is one line naming its node.
    pub fn new(config: &Config, budget: u64) -> Result<Cluster, String> {
        let hosts: String = std::iter::once("127.0.0.1 localhost\n".to_string())
            .chain(
                config
                    .node
                    .iter()
                    .enumerate()
                    .map(|(i, n)| format!("10.0.0.{} {}\n", i + 1, n.name)),
            )
            .collect();
        let mut nodes = Vec::new();
        let mut catalog: Vec<SiteInfo> = Vec::new();
        let mut programs: Vec<(PathBuf, usize)> = Vec::new();
        for (i, node) in config.node.iter().enumerate() {
            let at = |e: String| format!("node {} ({}): {e}", node.name, node.program.display());
            let mut argv = vec![node.name.clone()];
            argv.extend(node.args.iter().cloned());
            let env: Vec<String> = node.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let mut emulator =
                Emulator::open_env(&node.program, &argv, &env, budget, node.files.as_deref())
                    .map_err(at)?;
            // One catalog: the SDK's own sites once, then each program's.
            let own = emulator.catalog().to_vec();
            let builtins = dst::catalog::BUILTIN.len();
            if catalog.is_empty() {
                catalog.extend(own.iter().take(builtins).cloned());
            }
            let offset = match programs.iter().find(|(p, _)| *p == node.program) {
                Some(&(_, offset)) => offset,
                None => {
                    let offset = catalog.len() - builtins;
                    for site in own.iter().skip(builtins) {
                        let mut site = site.clone();
                        site.index = catalog.len() as u32;
                        catalog.push(site);
                    }
                    programs.push((node.program.clone(), offset));
                    offset
                }
            };
            let ip = ipv4([10, 0, 0, i as u8 + 1]);
            let loaded = &mut emulator.loaded;
            loaded.sites = Arc::new(loaded.sites.as_ref().clone().shifted(offset));
            loaded.threads.idle_exit = true;
            loaded.kernel.net.ip = Some(ip);
            loaded.kernel.crashable = node.faults;
            if let Some(check) = &config.check {
                loaded.kernel.world_files.push(check.history.clone());
            }
            loaded
                .kernel
                .put_file("/etc/hosts", hosts.as_bytes())
                .and_then(|()| {
                    loaded
                        .kernel
                        .put_file("/etc/nsswitch.conf", b"hosts: files\n")
                })
                .map_err(at)?;
            nodes.push(Node {
                name: node.name.clone(),
                ip,
                emulator,
                state: State::Ready,
                workload: node.workload,
            });
        }
        let history = config.check.as_ref().map(|check| {
            let message = format!("{} is linearizable ({} model)", check.history, check.model);
            let site = SiteInfo {
                index: catalog.len() as u32,
                kind: dst::catalog::Kind::Always,
                condition: "linearizable".into(),
                location: dst::catalog::Location {
                    file: check.history.clone(),
                    line: 0,
                    column: 0,
                    module: "dst cluster".into(),
                },
                id: dst::hash::fnv32(message.as_bytes()),
                message,
            };
            catalog.push(site);
            History {
                path: check.history.clone(),
                model: check.model.parse().expect("checked when read"),
                index: catalog.len() - 1,
            }
        });
        let region = Arc::new(Region::new(Layout {
            sites_capacity: catalog.len(),
            coverage_size: crate::inprocess::DECISION_COVERAGE,
            ..Layout::default()
        }));
        let start = Start {
            machines: nodes.iter().map(|n| n.emulator.loaded.clone()).collect(),
            states: vec![State::Ready; nodes.len()],
            now: 0,
            flights: BTreeMap::new(),
            last: BTreeMap::new(),
            sent: 0,
            current: nodes.len() - 1,
        };
        let mut cluster = Cluster {
            nodes,
            recorder: Recorder::new(Arc::clone(&region)),
            region,
            catalog,
            budget,
            latency: config.network.latency_us * 1000,
            max_delay: config.network.max_delay_us * 1000,
            edges: (0..EDGES).map(|_| UnsafeCell::new(0)).collect(),
            flags: 0,
            backstop: Duration::from_secs(30),
            now: 0,
            flights: BTreeMap::new(),
            sent: 0,
            last: BTreeMap::new(),
            current: 0,
            used: 0,
            start,
            faults: config.faults.clone(),
            history,
            pausable: config.node.iter().map(|n| n.faults).collect(),
            nemesis: Nemesis::default(),
            setting_up: None,
            stop: config.stop.clone(),
            stopping: None,
        };
        cluster.set_up();
        Ok(cluster)
    }

    /// Runs the cluster on nominal decisions until every node has been
    /// idle once (all of its threads waiting: a server in `accept` or its
    /// event loop, a client for its first answer), and makes that moment
    /// where every run starts, so the runtimes' start-up is not paid per
    /// run. A cluster whose run ends before that starts each run from the
    /// programs' start.
    fn set_up(&mut self) {
        self.region.view().reset(&[], 0);
        self.setting_up = Some(vec![false; self.nodes.len()]);
        let mut edges = vec![0u8; EDGES];
        let end = self.run(&mut edges);
        let idled = self.setting_up.take();
        if end.is_none() && idled.is_some_and(|idled| idled.iter().all(|&i| i)) {
            self.start = Start {
                machines: self
                    .nodes
                    .iter()
                    .map(|n| n.emulator.machine.clone())
                    .collect(),
                states: self.nodes.iter().map(|n| n.state).collect(),
                now: self.now,
                flights: self.flights.clone(),
                last: self.last.clone(),
                sent: self.sent,
                current: self.current,
            };
        }
    }

    /// [`Cluster::new`] from the cluster file at `path`.
    pub fn open(path: &Path, budget: u64) -> Result<Cluster, String> {
        Cluster::new(&Config::load(path)?, budget)
    }

    /// The nodes' names, in the file's order.
    pub fn names(&self) -> Vec<&str> {
        self.nodes.iter().map(|n| n.name.as_str()).collect()
    }

    /// The virtual time (nanoseconds) at which the last run ended.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Node `i`'s machine as the last run left it.
    pub fn machine(&self, i: usize) -> &super::machine::Machine {
        &self.nodes[i].emulator.machine
    }

    /// Which node has address `ip`.
    fn node_at(&self, ip: &[u8; 16]) -> Option<usize> {
        self.nodes.iter().position(|n| &n.ip == ip)
    }

    /// Takes node `from`'s outgoing packets onto the network: each takes
    /// the link's latency, maybe delayed (a stream's stay in order), a
    /// datagram maybe dropped or duplicated; one to no node is refused (a
    /// connect) or lost.
    fn send(&mut self, from: usize) {
        let packets = std::mem::take(&mut self.nodes[from].emulator.machine.kernel.net.outbox);
        for packet in packets {
            let to = match &packet.to {
                Addr::Inet { ip, .. } => self.node_at(ip),
                Addr::Unix(_) => None,
            };
            let Some(to) = to else {
                // No node has the address: a connect is refused.
                if let Some(answer) = packet.unanswered() {
                    self.fly(from, from, Cargo::Packet(answer), self.latency);
                }
                continue;
            };
            if !packet.segment.is_stream() && dst::world::net::dropped(&mut self.recorder) {
                continue;
            }
            let copies =
                if !packet.segment.is_stream() && dst::world::net::duplicated(&mut self.recorder) {
                    2
                } else {
                    1
                };
            for _ in 0..copies {
                let delay =
                    dst::world::net::delay(&mut self.recorder, self.latency, self.max_delay);
                self.fly(from, to, Cargo::Packet(packet.clone()), delay);
            }
        }
    }

    /// Puts `cargo` in flight from node `from` to node `to`, arriving
    /// after `delay` (a stream's packets and resets after the link's
    /// last).
    fn fly(&mut self, from: usize, to: usize, cargo: Cargo, delay: u64) {
        let mut at = self.now.saturating_add(delay);
        let ordered = match &cargo {
            Cargo::Packet(packet) => packet.segment.is_stream(),
            Cargo::Reset(_) => true,
        };
        if ordered {
            let last = self.last.entry((from, to)).or_insert(0);
            at = at.max(*last);
            *last = at;
        }
        self.sent += 1;
        self.flights
            .insert((at, self.sent), Flight { from, to, cargo });
    }

    /// Whether `cargo` on a link that is cut waits for the heal (a
    /// stream's packets, resets) rather than being lost (datagrams).
    fn waits(cargo: &Cargo) -> bool {
        match cargo {
            Cargo::Packet(packet) => packet.segment.is_stream(),
            Cargo::Reset(_) => true,
        }
    }

    /// One round of the nemesis: a partition, a pause (each maybe), and
    /// when each heals.
    fn round(&mut self) {
        let nemesis = &mut self.nemesis;
        nemesis.rounds += 1;
        let period = self.faults.period_ms * 1_000_000;
        let n = self.nodes.len() as u32;
        if let Some(links) =
            dst::world::nemesis::partition(&mut self.recorder, self.faults.partitions, n)
        {
            let id = nemesis.rounds;
            nemesis.links.cut(id, links);
            let at = self.now + dst::world::nemesis::heal_after(&mut self.recorder, period);
            nemesis.heals.insert((at, id), Heal::Partition(id));
        }
        let up: Vec<u32> = (0..self.nodes.len())
            .filter(|&i| self.pausable[i] && self.nodes[i].state != State::Exited)
            .filter(|&i| nemesis.paused[i] <= self.now)
            .map(|i| i as u32)
            .collect();
        if let Some(node) = dst::world::nemesis::pause(&mut self.recorder, self.faults.pauses, &up)
        {
            let at = self.now + dst::world::nemesis::heal_after(&mut self.recorder, period);
            nemesis.paused[node as usize] = at;
            nemesis
                .heals
                .insert((at, u64::MAX - nemesis.rounds), Heal::Pause);
        }
    }

    /// Heals what is due: partitions lifted (what waited on their links
    /// leaves again), paused nodes run again.
    fn heal(&mut self) {
        while let Some(entry) = self.nemesis.heals.first_entry() {
            if entry.key().0 > self.now {
                break;
            }
            match entry.remove() {
                Heal::Partition(id) => {
                    self.nemesis.links.heal(id);
                    let held = std::mem::take(&mut self.nemesis.held);
                    let (waiting, released): (Vec<Flight>, Vec<Flight>) = held
                        .into_iter()
                        .partition(|f| self.nemesis.links.blocked(f.from as u32, f.to as u32));
                    self.nemesis.held = waiting;
                    // What a released link held leaves first, then what was
                    // sent on it since (still on its way): a stream's order.
                    let links: std::collections::BTreeSet<(usize, usize)> =
                        released.iter().map(|f| (f.from, f.to)).collect();
                    let behind: Vec<(u64, u64)> = self
                        .flights
                        .iter()
                        .filter(|(_, f)| {
                            Cluster::waits(&f.cargo) && links.contains(&(f.from, f.to))
                        })
                        .map(|(&key, _)| key)
                        .collect();
                    for link in &links {
                        self.last.remove(link);
                    }
                    let behind = behind
                        .into_iter()
                        .filter_map(|key| self.flights.remove(&key));
                    for flight in released.into_iter().chain(behind.collect::<Vec<_>>()) {
                        self.fly(flight.from, flight.to, flight.cargo, self.latency);
                    }
                }
                Heal::Pause => {}
            }
        }
    }

    /// Hands every packet due by now to its node, which may run again.
    fn arrive(&mut self) {
        while let Some(entry) = self.flights.first_entry() {
            if entry.key().0 > self.now {
                break;
            }
            let flight = entry.remove();
            let behind_held = || {
                self.nemesis
                    .held
                    .iter()
                    .any(|h| h.from == flight.from && h.to == flight.to)
            };
            if self
                .nemesis
                .links
                .blocked(flight.from as u32, flight.to as u32)
                || (Cluster::waits(&flight.cargo) && behind_held())
            {
                // A cut link: a stream's packets wait for the heal.
                if Cluster::waits(&flight.cargo) {
                    self.nemesis.held.push(flight);
                }
                continue;
            }
            let Flight { from, to, cargo } = flight;
            let node = &mut self.nodes[to];
            if node.state == State::Exited {
                // No one listens there any more: a connect is refused, a
                // connection's segment resets it.
                if let Cargo::Packet(packet) = &cargo
                    && let Some(answer) = packet.unanswered()
                {
                    self.fly(to, from, Cargo::Packet(answer), self.latency);
                }
                continue;
            }
            let net = &mut node.emulator.machine.kernel.net;
            match cargo {
                Cargo::Packet(packet) => net.deliver(packet),
                Cargo::Reset(ip) => net.reset_from(&ip),
            }
            node.emulator.machine.wake_pollers();
            if matches!(node.state, State::Idle(_)) {
                node.state = State::Ready;
            }
            // Replies (an accept, a refusal) leave at once.
            self.send(to);
        }
        for node in &mut self.nodes {
            if let State::Idle(Some(until)) = node.state
                && until <= self.now
            {
                node.state = State::Ready;
            }
        }
    }

    /// When something next happens while no node can run: a packet's
    /// arrival or a waiting thread's deadline.
    fn next_event(&self) -> Option<u64> {
        let arrival = self.flights.keys().next().map(|&(at, _)| at);
        let deadline = self
            .nodes
            .iter()
            .filter_map(|n| match n.state {
                // A sleep for ever (a saturated deadline) ends never.
                State::Idle(until) => until.filter(|&u| u < u64::MAX),
                _ => None,
            })
            .min();
        let heal = self.nemesis.heals.keys().next().map(|&(at, _)| at);
        let next = arrival.into_iter().chain(deadline).chain(heal).min()?;
        // A round comes first if it is due before: it may cut or pause.
        Some(next.min(self.nemesis.next_round))
    }

    /// Whether the run's work is done: every workload node exited (every
    /// node, when none is a workload).
    fn done(&self) -> bool {
        let workloads = self.nodes.iter().any(|n| n.workload);
        self.nodes
            .iter()
            .filter(|n| n.workload || !workloads)
            .all(|n| n.state == State::Exited)
    }

    /// The workload is done: every other node still running gets
    /// SIGTERM (a waiting thread wakes to take it); one whose default
    /// action ends it exits now. `Some` when a node's end is a finding.
    fn terminate(&mut self) -> Option<End> {
        for i in 0..self.nodes.len() {
            let node = &mut self.nodes[i];
            if node.state == State::Exited {
                continue;
            }
            match node.emulator.machine.signal_process(SIGTERM as u64) {
                None => node.state = State::Ready,
                Some(exit) => {
                    if let Some(end) = self.after_slice(i, exit) {
                        return Some(end);
                    }
                }
            }
        }
        None
    }

    /// Node `i` runs one slice; `Some` ends the run.
    fn run_node(&mut self, i: usize, limit: u64, edges: &mut [u8]) -> Option<End> {
        let node = &mut self.nodes[i];
        let machine = &mut node.emulator.machine;
        std::mem::swap(&mut machine.recorder, &mut self.recorder);
        machine.now = machine.now.max(self.now);
        let before = machine.cpu.retired;
        let exit = machine.run_with(limit, edges);
        self.used += machine.cpu.retired - before;
        self.now = self.now.max(machine.now);
        std::mem::swap(&mut machine.recorder, &mut self.recorder);
        self.after_slice(i, exit)
    }

    /// Node `i` stopped with `exit` (after a slice, or a signal's default
    /// action): its packets leave, a crashed node restarts, an exited one
    /// hangs up; `Some` ends the run.
    fn after_slice(&mut self, i: usize, mut exit: Exit) -> Option<End> {
        if !matches!(
            exit,
            Exit::OutOfInstructions | Exit::Idle { .. } | Exit::Crashed
        ) {
            // The program ended: its connections close.
            self.nodes[i].emulator.machine.kernel.net.hang_up();
        }
        // What it sent leaves, a crashed node's last words too.
        self.send(i);
        if exit == Exit::Crashed {
            // Restarted from its start on what its files kept; what was
            // on its way to it is lost, its peers' connections to it are
            // reset (after what it sent them before: as its kernel would
            // answer, not a power cut's silence).
            self.close_history(i);
            let node = &mut self.nodes[i];
            node.emulator.restart();
            let ip = node.ip;
            exit = Exit::OutOfInstructions;
            self.flights.retain(|_, f| f.to != i);
            self.nemesis.held.retain(|f| f.to != i);
            self.last.retain(|&(_, b), _| b != i);
            for j in (0..self.nodes.len()).filter(|&j| j != i) {
                self.fly(i, j, Cargo::Reset(ip), self.latency);
            }
        }
        let stopping = self.stopping.is_some();
        let node = &mut self.nodes[i];
        match exit {
            Exit::OutOfInstructions => {
                node.state = State::Ready;
                None
            }
            Exit::Idle { until } => {
                node.state = State::Idle(until);
                if let Some(idled) = &mut self.setting_up {
                    idled[i] = true;
                }
                None
            }
            Exit::Status(0) => {
                node.state = State::Exited;
                None
            }
            // Ended by SIGTERM, or exiting with 128 + SIGTERM as shells
            // and JVMs report it.
            Exit::Signal {
                signal: SIGTERM, ..
            }
            | Exit::Status(143)
                if stopping =>
            {
                node.state = State::Exited;
                None
            }
            exit => {
                node.state = State::Exited;
                let name = node.name.clone();
                Some(match node.emulator.end(exit) {
                    End::Crash(dst_kernel::Outcome::Crash {
                        cause,
                        message,
                        location,
                    }) => End::Crash(dst_kernel::Outcome::Crash {
                        cause,
                        message: if stopping {
                            format!("node {name}: {message} (stopping: after SIGTERM)")
                        } else {
                            format!("node {name}: {message}")
                        },
                        location,
                    }),
                    end => end,
                })
            }
        }
    }
}

impl Cluster {
    /// One run from where runs start; see the module docs. `None` while
    /// setting up, when every node has been idle once.
    fn run(&mut self, edges: &mut [u8]) -> Option<End> {
        let start = &self.start;
        self.now = start.now;
        self.flights.clone_from(&start.flights);
        self.last.clone_from(&start.last);
        self.sent = start.sent;
        self.current = start.current;
        self.used = 0;
        self.stopping = None;
        for (i, node) in self.nodes.iter_mut().enumerate() {
            node.emulator.machine.clone_from(&start.machines[i]);
            node.state = start.states[i];
        }
        let period = self.faults.period_ms * 1_000_000;
        self.nemesis = Nemesis {
            paused: vec![0; self.nodes.len()],
            next_round: match (period, &self.setting_up) {
                (0, _) | (_, Some(_)) => u64::MAX,
                _ => self.now + period,
            },
            ..Nemesis::default()
        };
        if self.setting_up.is_none() && self.faults.max_skew_ms > 0 {
            for node in &mut self.nodes {
                node.emulator.machine.skew = dst::world::clock::skew(
                    &mut self.recorder,
                    self.faults.max_skew_ms * 1_000_000,
                );
            }
        }
        loop {
            if self.done() {
                if self.stopping.is_none() && self.stop.term && self.setting_up.is_none() {
                    let grace = self.stop.grace_ms.saturating_mul(1_000_000);
                    self.stopping = Some(self.now.saturating_add(grace));
                    if let Some(end) = self.terminate() {
                        return Some(end);
                    }
                }
                let stopped = self.stopping.is_none_or(|until| {
                    self.now >= until || self.nodes.iter().all(|n| n.state == State::Exited)
                });
                if stopped {
                    return Some(End::Ok);
                }
            }
            if self
                .setting_up
                .as_ref()
                .is_some_and(|idled| idled.iter().all(|&i| i))
            {
                return None;
            }
            if self.now >= self.nemesis.next_round {
                // One round, however far time jumped past it (rounds a
                // jump skipped do not happen).
                self.round();
                let next = self.nemesis.next_round.saturating_add(period);
                self.nemesis.next_round = next.max(self.now.saturating_add(1));
            }
            self.heal();
            self.arrive();
            let n = self.nodes.len();
            let ready: Vec<usize> = (1..=n)
                .map(|k| (self.current + k) % n)
                .filter(|&i| self.nodes[i].state == State::Ready)
                .filter(|&i| self.nemesis.paused[i] <= self.now)
                .collect();
            if ready.is_empty() {
                // A stop's grace ends too (it is later than now: else the
                // run would have ended above).
                let next = match (self.next_event(), self.stopping) {
                    (Some(at), Some(until)) => Some(at.min(until)),
                    (at, until) => at.or(until),
                };
                match next {
                    Some(at) => {
                        debug_assert!(at > self.now, "what is due has happened");
                        self.now = at;
                        continue;
                    }
                    None => return Some(self.stuck()),
                }
            }
            if self.used >= self.budget {
                return Some(End::Timeout);
            }
            let i = match ready.len() {
                1 => ready[0],
                len => {
                    let width = dst::decision::below_width(len as u64);
                    let mut bytes = [0u8; 8];
                    let k = self.recorder.decide_at(
                        Kind::Schedule,
                        SiteText::named("dst cluster: node to run"),
                        &mut bytes[..width],
                        Value::Mod(len as u64),
                    );
                    ready[k as usize]
                }
            };
            self.current = i;
            let limit = SLICE.min(self.budget - self.used);
            if let Some(end) = self.run_node(i, limit, edges) {
                return Some(end);
            }
        }
    }

    /// Nothing can happen any more: every thread of every live node
    /// waits for ever. While a workload node has not exited, that is the
    /// deadlock property (which node waits where, as details).
    fn stuck(&mut self) -> End {
        let workloads = self.nodes.iter().any(|n| n.workload);
        if !workloads {
            return End::Ok;
        }
        let waiting: Vec<serde_json::Value> = self
            .nodes
            .iter()
            .filter(|n| n.state != State::Exited)
            .map(|n| serde_json::json!({ "node": n.name, "threads": n.emulator.machine.threads.len() }))
            .collect();
        let details = serde_json::json!({ "nodes": waiting }).to_string();
        let site = &dst::catalog::BUILTIN[0];
        debug_assert!(site.message.contains("deadlock"));
        if self
            .recorder
            .evaluate(0, site.kind, true, f64::NAN)
            .report()
        {
            self.recorder.report(0, true, Some(details));
        }
        End::Ok
    }

    /// Node `i` crashed: each operation its history left pending gets an
    /// `info` line (its outcome unknown: it may have taken effect or not),
    /// so the restarted workload's next invocations are not read as a
    /// client invoking twice.
    fn close_history(&mut self, i: usize) {
        let Some(history) = &self.history else {
            return;
        };
        let kernel = &mut self.nodes[i].emulator.machine.kernel;
        let Some(bytes) = kernel.file_contents(&history.path) else {
            return;
        };
        // Read as the checker reads it (a history it cannot read is left
        // for the check to report).
        let text = String::from_utf8_lossy(&bytes);
        let Ok(events) = dst_oracles::format::events(&text, dst_oracles::Format::Jsonl) else {
            return;
        };
        let mut pending: BTreeMap<u64, String> = BTreeMap::new();
        let mut last_time = None;
        for event in events {
            last_time = event.time.or(last_time);
            match event.kind {
                dst_oracles::format::EventKind::Invoke => {
                    pending.insert(event.client, event.f);
                }
                _ => {
                    pending.remove(&event.client);
                }
            }
        }
        let mut lines = String::new();
        for (client, f) in pending {
            let mut info = serde_json::json!({ "client": client, "type": "info", "f": f });
            if last_time.is_some() {
                info["time"] = serde_json::json!(self.now.max(last_time.unwrap_or(0)));
            }
            lines.push_str(&info.to_string());
            lines.push('\n');
        }
        if !lines.is_empty() {
            kernel.append_file(&history.path, lines.as_bytes());
        }
    }

    /// Checks the run's history (every node's lines of it, together)
    /// against its model: the cluster's property, passing or failing with
    /// the explanation.
    fn check_history(&mut self) {
        let Some(history) = &self.history else {
            return;
        };
        let mut text = String::new();
        for node in &self.nodes {
            if let Some(bytes) = node.emulator.machine.kernel.file_contents(&history.path) {
                text.push_str(&String::from_utf8_lossy(&bytes));
                if !text.ends_with('\n') {
                    text.push('\n');
                }
            }
        }
        let options = dst_oracles::CheckOptions::default();
        let (linearizable, details) = match dst_oracles::lincheck_str(
            history.model,
            &text,
            Some(dst_oracles::Format::Jsonl),
            &options,
        ) {
            Ok(report) if report.verdict.is_violation() => {
                let lines: Vec<String> = report.to_string().lines().map(str::to_string).collect();
                let details = serde_json::json!({
                    "history": history.path,
                    "model": history.model.name(),
                    "operations": report.operations,
                    "violation": lines,
                });
                (false, details.to_string())
            }
            Ok(_) => (true, String::new()),
            Err(e) => (
                false,
                serde_json::json!({ "history": history.path, "unreadable": e.to_string() })
                    .to_string(),
            ),
        };
        let kind = dst::catalog::Kind::Always;
        if self
            .recorder
            .evaluate(history.index, kind, linearizable, f64::NAN)
            .report()
        {
            self.recorder
                .report(history.index, linearizable, Some(details));
        }
    }

    /// After a run traced or recorded with events: each node's system
    /// calls (named `node: call`) and output, as lifecycle events.
    fn record(&mut self) {
        let mut calls = Vec::new();
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        for node in &self.nodes {
            let machine = &node.emulator.machine;
            calls.extend(
                machine
                    .calls
                    .iter()
                    .map(|&(n, r)| (format!("{}: {}", node.name, syscall_name(n)), r)),
            );
            for (out, bytes) in [
                (&mut stdout, &machine.kernel.stdout),
                (&mut stderr, &machine.kernel.stderr),
            ] {
                if !bytes.is_empty() {
                    out.extend_from_slice(format!("[{}]\n", node.name).as_bytes());
                    out.extend_from_slice(bytes);
                    if !bytes.ends_with(b"\n") {
                        out.push(b'\n');
                    }
                }
            }
        }
        crate::guest::record_output(&mut self.recorder, Some(&calls), &stdout, &stderr);
    }
}

impl Executor for Cluster {
    fn execute(&mut self, input: &[u8]) -> End {
        self.region.view().reset(input, self.flags);
        // SAFETY: the cells are owned by `self` and written only here,
        // between the explorer's reads.
        let edges = unsafe {
            std::slice::from_raw_parts_mut(UnsafeCell::raw_get(self.edges.as_ptr()), EDGES)
        };
        edges.fill(0);
        let end = self.run(edges).expect("only setup stops early");
        if end == End::Ok {
            self.check_history();
        }
        if self.flags & (FLAG_EVENTS | FLAG_TRACE_SITES) != 0 {
            self.record();
        }
        end
    }

    fn region(&self) -> RegionRef<'_> {
        self.region.view()
    }

    fn catalog(&self) -> &[SiteInfo] {
        &self.catalog
    }

    fn coverage(&mut self) -> Coverage<'_> {
        // SAFETY: boxed cells owned by `self`, never resized; written only
        // by runs.
        let edges = unsafe { Map::from_raw_parts(UnsafeCell::raw_get(self.edges.as_ptr()), EDGES) };
        Coverage {
            edges,
            decisions: region_map(&self.region),
        }
    }

    fn flags(&self) -> u64 {
        self.flags
    }

    fn set_flags(&mut self, flags: u64) {
        self.flags = flags;
    }

    /// Runs end by their instruction budget; this is only a backstop.
    fn timeout(&self) -> Option<Duration> {
        Some(self.backstop)
    }

    fn set_timeout(&mut self, timeout: Duration) {
        self.backstop = timeout;
    }
}
