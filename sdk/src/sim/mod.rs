//! Deterministic simulation of a cluster in one thread (feature `sim`):
//! an async runtime, virtual time, a network, node crashes and disks, where
//! every choice is a decision of the run's input.
//!
//! A [`Sim`] holds *servers* (named nodes, each started from a factory and
//! restarted from it after a crash, with its tasks and memory gone and only
//! its [`disk`] left) and *clients* (named nodes running one future each).
//! [`Sim::run`] polls tasks one at a time until every client future has
//! finished:
//! - **Tasks** ([`spawn`], [`select`], [`join`]): when several tasks are
//!   ready, which one is polled next is a schedule decision, encoded as
//!   at every level (`crate::decision`; nominally the one woken first).
//! - **Time** ([`time`]): virtual; it advances only when no task can run,
//!   and jumps to the next timer or message. Each node reads it with its
//!   own clock skew (`sim: clock skew`, drawn when the node starts).
//! - **Network** ([`net`]): typed messages with latency, loss, duplication,
//!   reordering and partitions.
//! - **Disk** ([`disk`]): writes become durable on `sync` only.
//! - **Nemesis**: every `Config::nemesis_every` of virtual time the run
//!   decides whether to crash a server (and restart it later), partition
//!   the network (isolate a node, split it in two, or block one direction)
//!   and pause a node; each heals after a decided delay.
//!
//! Every fault is a [`fault!`](crate::fault) with a `sim: ...` name, so a
//! report lists the faults a finding needed, and the all-zero input is the
//! nominal run: no fault, every message in order after the fixed latency.
//!
//! What the network, the disks, the clocks and the nemesis do is the
//! level-agnostic model of [`crate::world`], which takes its decisions
//! through the SDK here (`Sdk`); this module is how async tasks reach it
//! (tasks, wakers, inboxes of typed messages, timers).
//!
//! ```
//! use dst::sim::{self, Sim, net};
//! use std::time::Duration;
//!
//! let mut sim = Sim::new();
//! sim.server("echo", || async {
//!     loop {
//!         let (from, n): (_, u32) = net::recv().await;
//!         net::send(from, n + 1);
//!     }
//! });
//! sim.client("client", async {
//!     // Messages may be lost (a decision): ask until an answer comes.
//!     loop {
//!         net::send("echo", 41u32);
//!         let reply = sim::time::timeout(Duration::from_secs(1), net::recv::<u32>()).await;
//!         if let Ok((_, n)) = reply {
//!             assert_eq!(n, 42);
//!             break;
//!         }
//!     }
//! });
//! let stats = sim.run().unwrap();
//! assert!(stats.delivered >= 2);
//! ```

pub mod disk;
pub mod net;
mod task;
pub mod time;
mod world;

use std::future::Future;
use std::panic::Location;
use std::rc::Rc;
use std::task::Context;
use std::time::Duration;

pub use task::{Either, JoinError, JoinHandle, join, join_all, select, spawn, yield_now};
pub use world::{NodeId, Stats, in_simulation};

use crate::decision::Kind;
use crate::runtime::DecisionSite;
use crate::world::{self as model, Decide, Fault};
use time::nanos;
use world::{BoxFuture, Event, Node, NodeState, World, with};

/// Settings of a simulation. The defaults suit a small cluster on a LAN.
#[derive(Clone, Debug)]
pub struct Config {
    /// Time every message takes (the nominal delay).
    pub latency: Duration,
    /// The most a delayed message waits beyond `latency`.
    pub max_delay: Duration,
    /// Virtual time a `disk::sync` takes.
    pub fsync_latency: Duration,
    /// Whether a `disk::sync` may lie: report success and make nothing
    /// durable (`sim: fsync lost`).
    pub lost_fsyncs: bool,
    /// How often the nemesis decides on crashes, partitions and pauses
    /// (`None`: never).
    pub nemesis_every: Option<Duration>,
    /// Which faults the nemesis may inject.
    pub crashes: bool,
    pub partitions: bool,
    pub pauses: bool,
    /// The largest clock skew of a node, either way (zero: none).
    pub max_clock_skew: Duration,
    /// A run that reaches this virtual time stops with [`SimError::TimeLimit`].
    pub time_limit: Duration,
    /// A run that polls tasks this often stops with [`SimError::StepLimit`].
    pub step_limit: u64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            latency: Duration::from_millis(1),
            max_delay: Duration::from_millis(50),
            fsync_latency: Duration::from_micros(100),
            lost_fsyncs: false,
            nemesis_every: Some(Duration::from_millis(100)),
            crashes: true,
            partitions: true,
            pauses: true,
            max_clock_skew: Duration::from_millis(100),
            time_limit: Duration::from_secs(3600),
            step_limit: 10_000_000,
        }
    }
}

/// Why a run stopped before every client finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// No task can run and nothing is due: the clients wait forever.
    Stalled { at: Duration, stats: Stats },
    /// Virtual time reached `Config::time_limit`.
    TimeLimit { at: Duration, stats: Stats },
    /// `Config::step_limit` task polls.
    StepLimit { at: Duration, stats: Stats },
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Stalled { at, .. } => write!(
                f,
                "the simulation stalled at {at:?}: clients wait, but no task can run and no timer or message is due"
            ),
            SimError::TimeLimit { at, .. } => {
                write!(f, "the simulation reached its time limit ({at:?})")
            }
            SimError::StepLimit { at, .. } => {
                write!(f, "the simulation reached its step limit at {at:?}")
            }
        }
    }
}

impl std::error::Error for SimError {}

enum Member {
    Server(world::Factory),
    Client(BoxFuture),
}

/// A simulated cluster, built up with [`Sim::server`] and [`Sim::client`]
/// and then [`run`](Sim::run).
pub struct Sim {
    config: Config,
    members: Vec<(Rc<str>, Member)>,
}

impl Default for Sim {
    fn default() -> Sim {
        Sim::new()
    }
}

impl Sim {
    /// A simulation with the default [`Config`].
    pub fn new() -> Sim {
        Sim::with_config(Config::default())
    }

    pub fn with_config(config: Config) -> Sim {
        Sim {
            config,
            members: Vec::new(),
        }
    }

    pub fn config_mut(&mut self) -> &mut Config {
        &mut self.config
    }

    fn check_name(&self, name: &str) {
        assert!(
            !self.members.iter().any(|(n, _)| &**n == name),
            "dst::sim: two nodes are named {name:?}"
        );
    }

    /// Adds a server: `start` is called to start it, and again after each
    /// crash (its previous tasks and memory are gone; its disk remains).
    pub fn server<F, Fut>(&mut self, name: &str, start: F) -> &mut Sim
    where
        F: Fn() -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.check_name(name);
        let factory: world::Factory = Rc::new(move || Box::pin(start()) as BoxFuture);
        self.members.push((name.into(), Member::Server(factory)));
        self
    }

    /// Adds a client node running `future`; the run ends when every client
    /// future has finished. The nemesis never crashes a client.
    pub fn client<Fut>(&mut self, name: &str, future: Fut) -> &mut Sim
    where
        Fut: Future<Output = ()> + 'static,
    {
        self.check_name(name);
        self.members
            .push((name.into(), Member::Client(Box::pin(future))));
        self
    }

    /// Runs the simulation until every client future has finished.
    pub fn run(self) -> Result<Stats, SimError> {
        let mut world = World::new(self.config);
        let mut starts = Vec::new();
        for (i, (name, member)) in self.members.into_iter().enumerate() {
            let node = NodeId(i as u32);
            let (factory, client) = match member {
                Member::Server(factory) => (Some(factory), None),
                Member::Client(future) => (None, Some(future)),
            };
            world.nodes.push(Node {
                name,
                factory,
                state: NodeState::Up,
                skew: 0,
                inbox: Default::default(),
                receivers: Vec::new(),
                disk: Default::default(),
                crashes: 0,
            });
            starts.push((node, client));
        }
        if let Some(every) = world.config.nemesis_every {
            world.schedule(nanos(every), Event::Nemesis);
        }
        world::install(world);
        let _teardown = Teardown;
        for (node, client) in starts {
            match client {
                Some(future) => {
                    with(|w| {
                        w.nodes[node.index()].skew = draw_skew(w);
                        w.spawn(node, future, true)
                    });
                }
                None => start_server(node),
            }
        }
        run_loop()
    }
}

/// Drops the world (and every task left) when the run ends or unwinds.
struct Teardown;

impl Drop for Teardown {
    fn drop(&mut self) {
        if let Some(mut world) = world::uninstall() {
            // Futures may touch the world when dropped; it is gone, and
            // they see `try_with` fail.
            let futures: Vec<_> = world
                .slots
                .iter_mut()
                .filter_map(|s| s.task.take())
                .collect();
            drop(futures);
            drop(world);
        }
    }
}

fn draw_skew(w: &World) -> i64 {
    model::clock::skew(&mut Sdk, nanos(w.config.max_clock_skew))
}

/// The world's decisions through the SDK: each fault a [`fault!`](crate::fault)
/// site of the catalog (so a report names it), each choice at the site the
/// world names, as a guest's recorder takes it (so its site id is the same
/// at every level).
pub(crate) struct Sdk;

/// Declares `Sdk::fault` from the fault sites, and the list a test checks
/// against [`Fault::name`] (a `fault!` site needs its name as a literal).
macro_rules! fault_sites {
    ($($fault:ident => $name:literal,)*) => {
        impl Sdk {
            #[cfg(test)]
            const SITES: &[(Fault, &str)] = &[$((Fault::$fault, $name)),*];
        }

        impl Decide for Sdk {
            fn fault(&mut self, fault: Fault) -> bool {
                match fault {
                    $(Fault::$fault => crate::fault!($name),)*
                }
            }

            fn below(&mut self, site: &'static str, n: u64) -> u64 {
                let site = DecisionSite::Text(crate::protocol::SiteText::named(site));
                crate::random::below_as(Kind::Below, n, site)
            }

            fn bool(&mut self, site: &'static str) -> bool {
                let site = DecisionSite::Text(crate::protocol::SiteText::named(site));
                crate::random::bool_in(site)
            }
        }
    };
}

fault_sites! {
    MessageDropped => "sim: message dropped",
    MessageDuplicated => "sim: message duplicated",
    MessageDelayed => "sim: message delayed",
    TornWrite => "sim: torn write",
    FsyncLost => "sim: fsync lost",
    ClockSkew => "sim: clock skew",
    NodeCrash => "sim: node crash",
    NetworkPartition => "sim: network partition",
    NodePause => "sim: node pause",
}

/// Starts (or restarts) a server from its factory, which runs as if on
/// the node (so it may ask for `net::this_node`).
fn start_server(node: NodeId) {
    let factory = with(|w| {
        w.nodes[node.index()].state = NodeState::Up;
        w.nodes[node.index()].skew = draw_skew(w);
        w.current = Some(node);
        w.nodes[node.index()].factory.clone()
    });
    let future = factory.map(|factory| factory());
    with(|w| {
        w.current = None;
        if let Some(future) = future {
            w.spawn(node, future, false);
        }
    });
}

/// Which of `n` ready tasks runs next: a schedule decision, the one
/// encoding of every level (`crate::decision`), 0 the task woken first.
#[track_caller]
fn pick(n: usize) -> usize {
    crate::random::below_as(
        Kind::Schedule,
        n as u64,
        DecisionSite::Caller(Location::caller()),
    ) as usize
}

fn at(w: &World) -> Duration {
    Duration::from_nanos(w.now)
}

/// What the run loop does next, decided with the world borrowed and done
/// without (user code may use the world).
enum Step {
    Poll(world::TaskId, BoxFuture),
    Drop(Vec<BoxFuture>),
    Start(NodeId),
    Done(Stats),
}

fn run_loop() -> Result<Stats, SimError> {
    loop {
        match with(next_step)? {
            Step::Done(stats) => return Ok(stats),
            Step::Drop(futures) => drop(futures),
            Step::Start(node) => start_server(node),
            Step::Poll(id, future) => poll(id, future),
        }
    }
}

fn next_step(w: &mut World) -> Result<Step, SimError> {
    w.drain_wakes();
    loop {
        if w.mains_left == 0 {
            w.stats.elapsed_nanos = w.now;
            return Ok(Step::Done(w.stats));
        }
        // The ready tasks of nodes that are up; the order they were woken
        // in is the nominal order.
        let runnable: Vec<usize> = (0..w.ready.len())
            .filter(|&i| {
                let id = w.ready[i];
                let node = w.task_mut(id).map(|t| t.node);
                node.is_some_and(|n| w.nodes[n.index()].state == NodeState::Up)
            })
            .collect();
        if !runnable.is_empty() {
            let choice = if runnable.len() > 1 {
                pick(runnable.len())
            } else {
                0
            };
            let id = w.ready.remove(runnable[choice]).expect("in range");
            let task = w.task_mut(id).expect("runnable");
            task.queued = false;
            let node = task.node;
            let future = task
                .future
                .take()
                .expect("a task not being polled has its future");
            w.current = Some(node);
            w.stats.steps += 1;
            if w.stats.steps > w.config.step_limit {
                return Err(SimError::StepLimit {
                    at: at(w),
                    stats: w.stats,
                });
            }
            return Ok(Step::Poll(id, future));
        }
        // Nothing can run: time jumps to the next event. Only the
        // nemesis and healing left: nothing will ever wake a client.
        let Some((&key, _)) = w
            .events
            .iter()
            .next()
            .filter(|_| w.events.len() > w.background)
        else {
            w.stats.elapsed_nanos = w.now;
            return Err(SimError::Stalled {
                at: at(w),
                stats: w.stats,
            });
        };
        if key.0 >= nanos(w.config.time_limit) {
            w.now = nanos(w.config.time_limit);
            w.stats.elapsed_nanos = w.now;
            return Err(SimError::TimeLimit {
                at: at(w),
                stats: w.stats,
            });
        }
        let event = w.events.remove(&key).expect("present");
        if matches!(event, Event::Nemesis | Event::Heal(_)) {
            w.background -= 1;
        }
        w.now = w.now.max(key.0);
        if let Some(step) = handle(w, event) {
            return Ok(step);
        }
        w.drain_wakes();
    }
}

fn poll(id: world::TaskId, mut future: BoxFuture) {
    let waker = with(|w| w.task_mut(id).map(|t| t.waker.clone())).expect("the polled task");
    let done = future
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_ready();
    let (finished, crashed) = with(|w| {
        w.current = None;
        let mut finished = None;
        if done {
            w.remove(id);
        } else if let Some(task) = w.task_mut(id) {
            task.future = Some(future);
        } else {
            // The task's node crashed (or it was aborted) while it ran.
            finished = Some(future);
        }
        let crashed: Vec<BoxFuture> = std::mem::take(&mut w.crash_requests)
            .into_iter()
            .flat_map(|node| crash(w, node))
            .collect();
        (finished, crashed)
    });
    drop(finished);
    drop(crashed);
}

/// Applies a due event; returns what must be done outside the borrow.
fn handle(w: &mut World, event: Event) -> Option<Step> {
    match event {
        Event::Wake(waker) => waker.wake(),
        Event::Deliver(envelope) => net::deliver(w, envelope),
        Event::Restart(node) => {
            if w.nodes[node.index()].state == NodeState::Down {
                return Some(Step::Start(node));
            }
        }
        Event::Resume(node) => {
            if w.nodes[node.index()].state == NodeState::Paused {
                w.nodes[node.index()].state = NodeState::Up;
            }
        }
        Event::Heal(id) => w.links.heal(id),
        Event::Nemesis => {
            let dropped = nemesis(w);
            if !dropped.is_empty() {
                return Some(Step::Drop(dropped));
            }
        }
    }
    None
}

/// Takes down `node`: its tasks, inbox and unsynced writes are lost.
fn crash(w: &mut World, node: NodeId) -> Vec<BoxFuture> {
    if w.nodes[node.index()].state == NodeState::Down {
        return Vec::new();
    }
    let ids: Vec<world::TaskId> = w
        .slots
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let t = s.task.as_ref()?;
            (t.node == node).then_some(world::TaskId {
                slot: i as u32,
                generation: s.generation,
            })
        })
        .collect();
    let futures = ids.into_iter().filter_map(|id| w.remove(id)).collect();
    let n = &mut w.nodes[node.index()];
    n.state = NodeState::Down;
    n.crashes += 1;
    n.inbox.clear();
    n.receivers.clear();
    n.disk.crash(&mut Sdk);
    w.stats.crashes += 1;
    futures
}

fn delay_ticks(w: &World) -> u64 {
    model::nemesis::heal_after(&mut Sdk, w.config.nemesis_every.map_or(0, nanos))
}

/// The servers that are up.
fn up_servers(w: &World) -> Vec<model::Node> {
    (0..w.nodes.len() as u32)
        .filter(|&n| {
            let node = &w.nodes[n as usize];
            node.factory.is_some() && node.state == NodeState::Up
        })
        .collect()
}

/// One round of the nemesis ([`crate::world::nemesis`]): each kind of
/// fault may strike once.
fn nemesis(w: &mut World) -> Vec<BoxFuture> {
    let mut dropped = Vec::new();
    let (crashes, partitions, pauses) = (w.config.crashes, w.config.partitions, w.config.pauses);
    if let Some(node) = model::nemesis::crash(&mut Sdk, crashes, &up_servers(w)) {
        let node = NodeId(node);
        dropped = crash(w, node);
        let at = w.now + delay_ticks(w);
        w.schedule(at, Event::Restart(node));
    }
    if let Some(links) = model::nemesis::partition(&mut Sdk, partitions, w.nodes.len() as u32) {
        let partition = net::add_partition(w, links);
        let at = w.now + delay_ticks(w);
        w.schedule(at, Event::Heal(partition.0));
    }
    if let Some(node) = model::nemesis::pause(&mut Sdk, pauses, &up_servers(w)) {
        w.nodes[node as usize].state = NodeState::Paused;
        w.stats.pauses += 1;
        let at = w.now + delay_ticks(w);
        w.schedule(at, Event::Resume(NodeId(node)));
    }
    if w.mains_left > 0
        && let Some(every) = w.config.nemesis_every
    {
        let at = w.now + nanos(every);
        w.schedule(at, Event::Nemesis);
    }
    dropped
}

/// Crashes `node` now (after the current task yields, if it runs there).
/// Its tasks, memory and unsynced writes are lost until [`restart_node`].
pub fn crash_node(node: impl net::ToNode) {
    with(|w| {
        let node = net::resolve(w, &node);
        w.crash_requests.push(node);
    })
}

/// Restarts a crashed server from its factory, now.
pub fn restart_node(node: impl net::ToNode) {
    with(|w| {
        let node = net::resolve(w, &node);
        if w.nodes[node.index()].state == NodeState::Down {
            let at = w.now;
            w.schedule(at, Event::Restart(node));
        }
    })
}

/// Pauses `node` for `duration`: its tasks are not polled, messages to it
/// queue up.
pub fn pause_node(node: impl net::ToNode, duration: Duration) {
    with(|w| {
        let node = net::resolve(w, &node);
        if w.nodes[node.index()].state == NodeState::Up {
            w.nodes[node.index()].state = NodeState::Paused;
            w.stats.pauses += 1;
            let at = w.now + nanos(duration);
            w.schedule(at, Event::Resume(node));
        }
    })
}

/// How often `node` has crashed so far in this run.
pub fn crashes_of(node: impl net::ToNode) -> u32 {
    with(|w| {
        let node = net::resolve(w, &node);
        w.nodes[node.index()].crashes
    })
}

#[cfg(test)]
mod tests {
    use super::{Fault, Sdk};

    #[test]
    fn each_fault_site_has_the_name_the_world_gives_it() {
        let sites: Vec<(Fault, &str)> = Sdk::SITES.to_vec();
        let expected: Vec<(Fault, &str)> = Fault::ALL.iter().map(|&f| (f, f.name())).collect();
        assert_eq!(sites, expected);
    }
}
