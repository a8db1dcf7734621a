//! The nemesis: at every round (a configured period of virtual time) it
//! may crash a server, partition the network and pause a server, each once
//! and in that order, and heals each after a decided number of periods.
//! A level runs the rounds and applies what they decide to its nodes.

use std::collections::BTreeSet;

use super::{Decide, Fault, Node, net};

/// Which server to crash this round, among the `up` servers (`sim: node
/// crash`, then which one); `None` when crashes are off or none is up.
pub fn crash(decide: &mut impl Decide, enabled: bool, up: &[Node]) -> Option<Node> {
    if !enabled || up.is_empty() || !decide.fault(Fault::NodeCrash) {
        return None;
    }
    Some(up[decide.below("sim: node crash which", up.len() as u64) as usize])
}

/// Which server to pause this round, among the `up` servers (`sim: node
/// pause`, then which one).
pub fn pause(decide: &mut impl Decide, enabled: bool, up: &[Node]) -> Option<Node> {
    if !enabled || up.is_empty() || !decide.fault(Fault::NodePause) {
        return None;
    }
    Some(up[decide.below("sim: node pause which", up.len() as u64) as usize])
}

/// The links to cut this round among `nodes` nodes (`sim: network
/// partition`, then its shape): one node isolated, the nodes split in two
/// sides (a side per node), or one direction of one link. May be empty
/// (a link from a node to itself).
pub fn partition(
    decide: &mut impl Decide,
    enabled: bool,
    nodes: u32,
) -> Option<BTreeSet<net::Link>> {
    if !enabled || nodes < 2 || !decide.fault(Fault::NetworkPartition) {
        return None;
    }
    let n = u64::from(nodes);
    let mut links = BTreeSet::new();
    match decide.below("sim: network partition shape", 3) {
        0 => {
            let x = decide.below("sim: network partition node", n) as Node;
            let rest: Vec<Node> = (0..nodes).filter(|&y| y != x).collect();
            links = net::between(&[x], &rest);
        }
        1 => {
            let side: Vec<bool> = (0..nodes)
                .map(|_| decide.bool("sim: network partition side"))
                .collect();
            for x in 0..nodes {
                for y in 0..nodes {
                    if side[x as usize] != side[y as usize] {
                        links.insert((x, y));
                    }
                }
            }
        }
        _ => {
            let x = decide.below("sim: network partition from", n) as Node;
            let y = decide.below("sim: network partition to", n) as Node;
            if x != y {
                links.insert((x, y));
            }
        }
    }
    debug_assert!(links.iter().all(|&(x, y)| x != y && x < nodes && y < nodes));
    Some(links)
}

/// How long until what a round did heals: 1 to 8 periods of `period_ns`.
pub fn heal_after(decide: &mut impl Decide, period_ns: u64) -> u64 {
    period_ns * (1 + decide.below("sim: heal after", 8))
}
