//! The network between nodes: which links are cut, and what becomes of a
//! message sent on an open one.
//!
//! Every message takes the link's latency; the nominal run therefore
//! delivers each link's messages in order. A message may be dropped
//! (`sim: message dropped`), duplicated (`sim: message duplicated`) or
//! delayed by up to a bound more (`sim: message delayed`, then the delay
//! in microseconds; which reorders it). A partition cuts directed links: a
//! message whose link is cut when it is sent or when it would arrive is
//! lost, as are messages to a node that is down (the level's to know).

use std::collections::{BTreeMap, BTreeSet};

use super::{Decide, Fault, Node};

/// A directed link.
pub type Link = (Node, Node);

/// The partitions in force, each a set of cut links under the id it was
/// added with.
#[derive(Default, Clone, Debug)]
pub struct Links {
    partitions: BTreeMap<u64, BTreeSet<Link>>,
}

impl Links {
    /// Whether a message from `from` to `to` is lost to a partition.
    pub fn blocked(&self, from: Node, to: Node) -> bool {
        self.partitions
            .values()
            .any(|links| links.contains(&(from, to)))
    }

    /// Cuts `links` until [`Links::heal`]`(id)`; `id` must be new.
    pub fn cut(&mut self, id: u64, links: BTreeSet<Link>) {
        let previous = self.partitions.insert(id, links);
        debug_assert!(previous.is_none(), "partition {id} added twice");
    }

    /// Lifts partition `id` (if it is still in force).
    pub fn heal(&mut self, id: u64) {
        self.partitions.remove(&id);
    }

    /// Lifts every partition.
    pub fn heal_all(&mut self) {
        self.partitions.clear();
    }
}

/// Every link between a node of `a` and a node of `b`, both ways.
pub fn between(a: &[Node], b: &[Node]) -> BTreeSet<Link> {
    let mut links = BTreeSet::new();
    for &x in a {
        for &y in b {
            links.insert((x, y));
            links.insert((y, x));
        }
    }
    links
}

/// Whether a message sent on an open link is lost on its way.
pub fn dropped(decide: &mut impl Decide) -> bool {
    decide.fault(Fault::MessageDropped)
}

/// Whether a message that is not lost also arrives a second time.
pub fn duplicated(decide: &mut impl Decide) -> bool {
    decide.fault(Fault::MessageDuplicated)
}

/// How long one copy of a message takes: `latency_ns`, or with `sim:
/// message delayed` up to `max_delay_ns` more (in whole microseconds).
pub fn delay(decide: &mut impl Decide, latency_ns: u64, max_delay_ns: u64) -> u64 {
    let mut delay = latency_ns;
    if decide.fault(Fault::MessageDelayed) {
        let extra = max_delay_ns / 1000;
        delay += decide.below("sim: message delay", extra.max(1)) * 1000;
    }
    debug_assert!(delay >= latency_ns && delay <= latency_ns + max_delay_ns.max(1000));
    delay
}
