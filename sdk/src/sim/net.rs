//! The simulated network: typed messages between named nodes, with delay,
//! reordering, loss, duplication and partitions as decisions.
//!
//! What becomes of a message is the world's network model
//! ([`crate::world::net`]): every message takes `Config::latency`, and may
//! be dropped, duplicated or delayed by up to `Config::max_delay` more; a
//! partition blocks directed links. Here is how tasks reach it: a message
//! is any `Clone` value, delivered to the receiving node's inbox.

use std::any::Any;
use std::collections::BTreeSet;

use crate::world;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::Sdk;
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
        if w.blocked(from, to) || world::net::dropped(&mut Sdk) {
            w.stats.dropped += 1;
            return;
        }
        let copy = world::net::duplicated(&mut Sdk).then(|| message.clone());
        post(w, from, to, Box::new(message));
        if let Some(copy) = copy {
            w.stats.duplicated += 1;
            post(w, from, to, Box::new(copy));
        }
    })
}

fn post(w: &mut World, from: NodeId, to: NodeId, message: Box<dyn Any>) {
    let delay = world::net::delay(&mut Sdk, nanos(w.config.latency), nanos(w.config.max_delay));
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
        let a: Vec<world::Node> = a.iter().map(|n| resolve(w, n).0).collect();
        let b: Vec<world::Node> = b.iter().map(|n| resolve(w, n).0).collect();
        add_partition(w, world::net::between(&a, &b))
    })
}

/// Blocks the links from each node of `from` to each node of `to` only
/// (an asymmetric partition: replies still flow the other way).
pub fn partition_oneway<A: ToNode, B: ToNode>(from: &[A], to: &[B]) -> Partition {
    with(|w| {
        let mut links = BTreeSet::new();
        for x in from {
            for y in to {
                links.insert((resolve(w, x).0, resolve(w, y).0));
            }
        }
        add_partition(w, links)
    })
}

pub(crate) fn add_partition(w: &mut World, links: BTreeSet<world::net::Link>) -> Partition {
    let id = w.next_seq();
    w.links.cut(id, links);
    w.stats.partitions += 1;
    Partition(id)
}

/// Lifts a partition.
pub fn heal(partition: Partition) {
    with(|w| w.links.heal(partition.0));
}

/// Lifts every partition.
pub fn heal_all() {
    with(|w| w.links.heal_all());
}
