//! The state of one simulation: tasks, nodes, the event queue and virtual
//! time, kept in a thread-local while [`Sim::run`](super::Sim::run) runs.

use std::any::Any;
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Wake, Waker};

use super::Config;
use crate::world::disk::Disk;
use crate::world::net::Links;

pub(crate) type BoxFuture = Pin<Box<dyn Future<Output = ()>>>;
pub(crate) type Factory = Rc<dyn Fn() -> BoxFuture>;

/// A node of the simulated cluster, by its index in the order nodes were
/// added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The index of the node (0 for the first one added).
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The node's name (as given to `Sim::server` or `Sim::client`).
    pub fn name(self) -> Rc<str> {
        with(|w| w.nodes[self.index()].name.clone())
    }
}

/// A task slot: index and generation, so a waker of a finished task that
/// fires late wakes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TaskId {
    pub slot: u32,
    pub generation: u32,
}

pub(crate) struct Task {
    /// `None` while the task is being polled.
    pub future: Option<BoxFuture>,
    pub node: NodeId,
    pub queued: bool,
    /// One of the client futures whose end ends the run.
    pub main: bool,
    pub waker: Waker,
}

pub(crate) struct Slot {
    pub generation: u32,
    pub task: Option<Task>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeState {
    Up,
    Paused,
    Down,
}

pub(crate) struct Node {
    pub name: Rc<str>,
    /// Servers are restarted from their factory; clients have none and are
    /// never crashed by the nemesis.
    pub factory: Option<Factory>,
    pub state: NodeState,
    /// Added to the global time in this node's `now()` (nanoseconds).
    pub skew: i64,
    pub inbox: VecDeque<(NodeId, Box<dyn Any>)>,
    pub receivers: Vec<Waker>,
    pub disk: Disk,
    pub crashes: u32,
}

/// A message in flight.
pub(crate) struct Envelope {
    pub from: NodeId,
    pub to: NodeId,
    pub message: Box<dyn Any>,
}

/// Something due at a virtual time.
pub(crate) enum Event {
    Wake(Waker),
    Deliver(Envelope),
    Restart(NodeId),
    Resume(NodeId),
    Heal(u64),
    Nemesis,
}

/// Wakers push task ids here; the run loop drains it. (A `Waker` must be
/// `Send`, and it may fire while the world is borrowed.)
pub(crate) struct WakeQueue(Mutex<Vec<TaskId>>);

struct TaskWaker {
    id: TaskId,
    queue: Arc<WakeQueue>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.queue
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.id);
    }
}

/// Counters a run reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Virtual nanoseconds from the start to the end of the run.
    pub elapsed_nanos: u64,
    /// Task polls.
    pub steps: u64,
    /// Messages sent, delivered, dropped (by faults, partitions or down
    /// nodes) and duplicated.
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub duplicated: u64,
    /// Node crashes, partitions and pauses the run went through.
    pub crashes: u64,
    pub partitions: u64,
    pub pauses: u64,
}

pub(crate) struct World {
    pub config: Config,
    pub now: u64,
    pub seq: u64,
    pub slots: Vec<Slot>,
    pub free: Vec<u32>,
    pub ready: VecDeque<TaskId>,
    pub wakes: Arc<WakeQueue>,
    pub events: BTreeMap<(u64, u64), Event>,
    pub nodes: Vec<Node>,
    /// The node of the task being polled.
    pub current: Option<NodeId>,
    /// The partitions in force.
    pub links: Links,
    /// Nodes to crash once the task being polled yields (a task may crash
    /// its own node).
    pub crash_requests: Vec<NodeId>,
    pub mains_left: usize,
    /// Events in `events` that wake nobody by themselves (nemesis rounds,
    /// heals): a run with only these left is stalled.
    pub background: usize,
    pub stats: Stats,
}

thread_local! {
    static WORLD: RefCell<Option<World>> = const { RefCell::new(None) };
}

/// Runs `f` on the current simulation; panics outside one.
pub(crate) fn with<R>(f: impl FnOnce(&mut World) -> R) -> R {
    WORLD.with(|cell| {
        let mut world = cell.borrow_mut();
        let world = world
            .as_mut()
            .expect("dst::sim: called outside a simulation (inside Sim::run only)");
        f(world)
    })
}

/// Runs `f` on the current simulation if there is one and it is not
/// borrowed (for `Drop` impls, which also run while a world is torn down).
pub(crate) fn try_with<R>(f: impl FnOnce(&mut World) -> R) -> Option<R> {
    WORLD
        .try_with(|cell| {
            let mut world = cell.try_borrow_mut().ok()?;
            world.as_mut().map(f)
        })
        .ok()
        .flatten()
}

/// Whether a simulation runs on this thread.
pub fn in_simulation() -> bool {
    WORLD.with(|cell| cell.try_borrow().map(|w| w.is_some()).unwrap_or(true))
}

pub(crate) fn install(world: World) {
    WORLD.with(|cell| {
        let mut slot = cell.borrow_mut();
        assert!(
            slot.is_none(),
            "dst::sim: a simulation is already running on this thread"
        );
        *slot = Some(world);
    });
}

pub(crate) fn uninstall() -> Option<World> {
    WORLD.with(|cell| cell.borrow_mut().take())
}

impl World {
    pub fn new(config: Config) -> World {
        World {
            config,
            now: 0,
            seq: 0,
            slots: Vec::new(),
            free: Vec::new(),
            ready: VecDeque::new(),
            wakes: Arc::new(WakeQueue(Mutex::new(Vec::new()))),
            events: BTreeMap::new(),
            nodes: Vec::new(),
            current: None,
            links: Links::default(),
            crash_requests: Vec::new(),
            mains_left: 0,
            background: 0,
            stats: Stats::default(),
        }
    }

    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Queues `event` at global time `at`; returns its key.
    pub fn schedule(&mut self, at: u64, event: Event) -> (u64, u64) {
        let key = (at, self.next_seq());
        if matches!(event, Event::Nemesis | Event::Heal(_)) {
            self.background += 1;
        }
        self.events.insert(key, event);
        key
    }

    pub fn current_node(&self) -> NodeId {
        self.current
            .expect("dst::sim: called outside a simulated task")
    }

    pub fn node_named(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| &*n.name == name)
            .map(|i| NodeId(i as u32))
    }

    /// Adds a task on `node`, ready to run.
    pub fn spawn(&mut self, node: NodeId, future: BoxFuture, main: bool) -> TaskId {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    task: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let entry = &mut self.slots[slot as usize];
        entry.generation = entry.generation.wrapping_add(1);
        let id = TaskId {
            slot,
            generation: entry.generation,
        };
        let waker = Waker::from(Arc::new(TaskWaker {
            id,
            queue: self.wakes.clone(),
        }));
        entry.task = Some(Task {
            future: Some(future),
            node,
            queued: true,
            main,
            waker,
        });
        if main {
            self.mains_left += 1;
        }
        self.ready.push_back(id);
        id
    }

    pub fn task_mut(&mut self, id: TaskId) -> Option<&mut Task> {
        let slot = self.slots.get_mut(id.slot as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        slot.task.as_mut()
    }

    /// Removes a task; returns its future for the caller to drop once the
    /// world is no longer borrowed.
    pub fn remove(&mut self, id: TaskId) -> Option<BoxFuture> {
        let slot = self.slots.get_mut(id.slot as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        let task = slot.task.take()?;
        self.free.push(id.slot);
        if task.main {
            self.mains_left -= 1;
        }
        task.future
    }

    /// Moves woken tasks to the ready queue, in the order they were woken.
    pub fn drain_wakes(&mut self) {
        let woken = std::mem::take(&mut *self.wakes.0.lock().unwrap_or_else(|e| e.into_inner()));
        for id in woken {
            if let Some(task) = self.task_mut(id)
                && !task.queued
            {
                task.queued = true;
                self.ready.push_back(id);
            }
        }
    }

    /// Whether a message from `from` to `to` is blocked by a partition.
    pub fn blocked(&self, from: NodeId, to: NodeId) -> bool {
        self.links.blocked(from.0, to.0)
    }
}
