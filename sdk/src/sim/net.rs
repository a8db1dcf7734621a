//! The simulated network: typed messages between named nodes, with delay,
//! reordering, loss, duplication and partitions as decisions.
//!
//! Every message takes the configured latency; the nominal run therefore
//! delivers each link's messages in order. A message may be dropped
//! (`sim: message dropped`), delayed by up to `Config::max_delay` more
//! (`sim: message delayed`, which reorders it), or duplicated
//! (`sim: message duplicated`). A partition blocks a directed link: a
//! message whose link is blocked when it is sent or when it would arrive
//! is lost, as are messages to a node that is down.

use std::any::Any;
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::time::nanos;
use super::world::{Envelope, Event, NodeId, World, with};

/// Something that names a node: a [`NodeId`] or a node's name.
pub trait ToNode {
    /// The node's id, or else its name.
    fn id_or_name(&self) -> Result<NodeId, &str>;
}

impl ToNode for NodeId {
    fn id_or_name(&self) -> Result<NodeId, &str> {
        Ok(*self)
    }
}

impl ToNode for &str {
    fn id_or_name(&self) -> Result<NodeId, &str> {
        Err(self)
    }
}

impl ToNode for String {
    fn id_or_name(&self) -> Result<NodeId, &str> {
        Err(self)
    }
}

pub(crate) fn resolve(world: &World, node: &impl ToNode) -> NodeId {
    match node.id_or_name() {
        Ok(id) => id,
        Err(name) => world
            .node_named(name)
            .unwrap_or_else(|| panic!("dst::sim: no node named {name:?}")),
    }
}

/// The node this task runs on.
pub fn this_node() -> NodeId {
    with(|w| w.current_node())
}

/// The node called `name`, if there is one.
pub fn node(name: &str) -> Option<NodeId> {
    with(|w| w.node_named(name))
}

/// Every node, in the order they were added.
pub fn nodes() -> Vec<NodeId> {
    with(|w| (0..w.nodes.len() as u32).map(NodeId).collect())
}

/// Sends `message` from this node to `to`. Never blocks and never fails:
/// like a datagram, the message arrives later, or never.
pub fn send<M: Clone + 'static>(to: impl ToNode, message: M) {
    with(|w| {
        let from = w.current_node();
        let to = resolve(w, &to);
        w.stats.sent += 1;
        if w.blocked(from, to) || crate::fault!("sim: message dropped") {
            w.stats.dropped += 1;
            return;
        }
        let copy = crate::fault!("sim: message duplicated").then(|| message.clone());
        post(w, from, to, Box::new(message));
        if let Some(copy) = copy {
            w.stats.duplicated += 1;
            post(w, from, to, Box::new(copy));
        }
    })
}

fn post(w: &mut World, from: NodeId, to: NodeId, message: Box<dyn Any>) {
    let mut delay = nanos(w.config.latency);
    if crate::fault!("sim: message delayed") {
        let extra = nanos(w.config.max_delay) / 1000;
        delay += crate::random::below(extra.max(1)) * 1000;
    }
    let at = w.now + delay;
    w.schedule(at, Event::Deliver(Envelope { from, to, message }));
}

/// Hands a due message to its node (or loses it).
pub(crate) fn deliver(w: &mut World, envelope: Envelope) {
    let node = &w.nodes[envelope.to.index()];
    if node.state == super::world::NodeState::Down || w.blocked(envelope.from, envelope.to) {
        w.stats.dropped += 1;
        return;
    }
    w.stats.delivered += 1;
    let node = &mut w.nodes[envelope.to.index()];
    node.inbox.push_back((envelope.from, envelope.message));
    for waker in node.receivers.drain(..) {
        waker.wake();
    }
}

/// Waits for the next message to this node: its sender and the message.
///
/// Panics if the message is not an `M`: a simulation's nodes exchange one
/// message type (an enum of every kind of message).
pub fn recv<M: 'static>() -> Recv<M> {
    Recv {
        _message: std::marker::PhantomData,
    }
}

/// The next message to this node, if one has arrived.
pub fn try_recv<M: 'static>() -> Option<(NodeId, M)> {
    with(|w| {
        let node = w.current_node();
        let (from, message) = w.nodes[node.index()].inbox.pop_front()?;
        Some((from, downcast(message, node, w)))
    })
}

fn downcast<M: 'static>(message: Box<dyn Any>, node: NodeId, w: &World) -> M {
    match message.downcast::<M>() {
        Ok(m) => *m,
        Err(_) => panic!(
            "dst::sim: node {} received a message that is not a {}: every node of a simulation must exchange one message type",
            w.nodes[node.index()].name,
            std::any::type_name::<M>()
        ),
    }
}

/// See [`recv`].
#[must_use = "futures do nothing unless awaited"]
pub struct Recv<M> {
    _message: std::marker::PhantomData<fn() -> M>,
}

impl<M: 'static> Future for Recv<M> {
    type Output = (NodeId, M);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<(NodeId, M)> {
        with(|w| {
            let node = w.current_node();
            match w.nodes[node.index()].inbox.pop_front() {
                Some((from, message)) => Poll::Ready((from, downcast(message, node, w))),
                None => {
                    let receivers = &mut w.nodes[node.index()].receivers;
                    if !receivers.iter().any(|r| r.will_wake(cx.waker())) {
                        receivers.push(cx.waker().clone());
                    }
                    Poll::Pending
                }
            }
        })
    }
}

/// A partition in force, to [`heal`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Partition(pub(crate) u64);

/// Blocks every link between a node of `a` and a node of `b`, both ways.
pub fn partition<A: ToNode, B: ToNode>(a: &[A], b: &[B]) -> Partition {
    with(|w| {
        let a: Vec<NodeId> = a.iter().map(|n| resolve(w, n)).collect();
        let b: Vec<NodeId> = b.iter().map(|n| resolve(w, n)).collect();
        let mut links = BTreeSet::new();
        for &x in &a {
            for &y in &b {
                links.insert((x, y));
                links.insert((y, x));
            }
        }
        add_partition(w, links)
    })
}

/// Blocks the links from each node of `from` to each node of `to` only
/// (an asymmetric partition: replies still flow the other way).
pub fn partition_oneway<A: ToNode, B: ToNode>(from: &[A], to: &[B]) -> Partition {
    with(|w| {
        let mut links = BTreeSet::new();
        for x in from {
            for y in to {
                links.insert((resolve(w, x), resolve(w, y)));
            }
        }
        add_partition(w, links)
    })
}

pub(crate) fn add_partition(w: &mut World, links: BTreeSet<(NodeId, NodeId)>) -> Partition {
    let id = w.next_seq();
    w.partitions.insert(id, links);
    w.stats.partitions += 1;
    Partition(id)
}

/// Lifts a partition.
pub fn heal(partition: Partition) {
    with(|w| w.partitions.remove(&partition.0));
}

/// Lifts every partition.
pub fn heal_all() {
    with(|w| w.partitions.clear());
}
