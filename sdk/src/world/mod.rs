//! The world a run happens in, as one model for every level (feature
//! `world`): virtual time ([`clock`]), the network between nodes ([`net`]),
//! each node's disk ([`disk`]: named files, for `dst::sim`; [`fs`]: a
//! directory tree with POSIX names, for programs run unmodified) and the
//! nemesis that crashes, partitions and pauses nodes ([`nemesis`]).
//!
//! The model is plain state and the decisions that change it; it takes each
//! decision through [`Decide`], which every level implements over its own
//! run: `dst::sim` over the SDK's (faults are catalog sites), the executors
//! over their guest's `protocol::Recorder` (faults named by text); every
//! choice is taken at a site named by text, the same at every level. So a clock reading,
//! a lost message or a torn write is the same decision, with the same bytes,
//! whether the node is a `dst::sim` task, a wasm module or a program on the
//! emulator; what each level adds is how its code reaches the model (async
//! tasks, WASI, Linux system calls).

pub mod clock;
pub mod disk;
pub mod fs;
pub mod nemesis;
pub mod net;

use crate::decision::{self, Kind, Value};
use crate::protocol::SiteText;

/// A fault the world may inject, by the name reports show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// A message is lost on its way.
    MessageDropped,
    /// A message arrives twice.
    MessageDuplicated,
    /// A message waits beyond the link's latency (and so may overtake or
    /// be overtaken).
    MessageDelayed,
    /// A crash keeps a prefix of the unsynced writes.
    TornWrite,
    /// A sync reports success and makes nothing durable.
    FsyncLost,
    /// A node's clock runs ahead or behind the others.
    ClockSkew,
    /// The nemesis crashes a node.
    NodeCrash,
    /// The nemesis partitions the network.
    NetworkPartition,
    /// The nemesis pauses a node.
    NodePause,
}

impl Fault {
    /// Every fault, in declaration order.
    pub const ALL: [Fault; 9] = [
        Fault::MessageDropped,
        Fault::MessageDuplicated,
        Fault::MessageDelayed,
        Fault::TornWrite,
        Fault::FsyncLost,
        Fault::ClockSkew,
        Fault::NodeCrash,
        Fault::NetworkPartition,
        Fault::NodePause,
    ];

    /// The fault's name: its site's message in catalogs and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Fault::MessageDropped => "sim: message dropped",
            Fault::MessageDuplicated => "sim: message duplicated",
            Fault::MessageDelayed => "sim: message delayed",
            Fault::TornWrite => "sim: torn write",
            Fault::FsyncLost => "sim: fsync lost",
            Fault::ClockSkew => "sim: clock skew",
            Fault::NodeCrash => "sim: node crash",
            Fault::NetworkPartition => "sim: network partition",
            Fault::NodePause => "sim: node pause",
        }
    }
}

/// How the world takes its decisions in one run: each level implements it
/// over its own decision stream.
pub trait Decide {
    /// Whether `fault` strikes here: a `Fault` decision (one byte, nominally
    /// not).
    fn fault(&mut self, fault: Fault) -> bool;

    /// A value in `0..n`, nominally 0: a `Below` decision of
    /// [`below_width`](crate::decision::below_width)`(n)` bytes (none for
    /// `n <= 1`) at the site named `site`.
    fn below(&mut self, site: &'static str, n: u64) -> u64;

    /// A boolean, nominally `false`: a `Bool` decision of one byte at the
    /// site named `site`.
    fn bool(&mut self, site: &'static str) -> bool;
}

/// A node of the world, by its index in the order nodes were added.
pub type Node = u32;

/// The world's decisions in a guest's run, as its executor records them:
/// each fault and choice a decision at a site named by text.
impl<R: std::ops::Deref<Target = crate::region::Region>> Decide for crate::protocol::Recorder<R> {
    fn fault(&mut self, fault: Fault) -> bool {
        self.decide_at(
            Kind::Fault,
            SiteText::named(fault.name()),
            &mut [0],
            Value::FAULT,
        ) != 0
    }

    fn below(&mut self, site: &'static str, n: u64) -> u64 {
        let width = decision::below_width(n);
        if width == 0 {
            return 0;
        }
        let mut bytes = [0u8; 8];
        let value = self.decide_at(
            Kind::Below,
            SiteText::named(site),
            &mut bytes[..width],
            Value::Mod(n),
        );
        debug_assert!(value < n);
        value
    }

    fn bool(&mut self, site: &'static str) -> bool {
        self.decide_at(Kind::Bool, SiteText::named(site), &mut [0], Value::Bit) != 0
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::region::{Layout, Region};

    /// Decisions from a script: faults strike where listed, choices are
    /// the listed values; records what was asked.
    #[derive(Default)]
    struct Script {
        faults: Vec<Fault>,
        values: Vec<u64>,
        asked: Vec<String>,
    }

    impl Decide for Script {
        fn fault(&mut self, fault: Fault) -> bool {
            self.asked.push(fault.name().to_string());
            self.faults.contains(&fault)
        }

        fn below(&mut self, site: &'static str, n: u64) -> u64 {
            self.asked.push(format!("{site} <{n}"));
            if n <= 1 { 0 } else { self.values.remove(0) % n }
        }

        fn bool(&mut self, site: &'static str) -> bool {
            self.asked.push(site.to_string());
            self.values.remove(0) & 1 == 1
        }
    }

    #[test]
    fn a_crash_keeps_synced_writes_loses_the_rest_or_tears_the_last() {
        let mut disk = disk::Disk::default();
        disk.write("log", 0, b"synced");
        assert!(disk.sync(&mut Script::default(), "log", false));
        disk.write("log", 6, b"-more");
        disk.write("new", 0, b"never synced");
        let mut nominal = disk.clone();
        nominal.crash(&mut Script::default());
        assert_eq!(nominal.read("log"), Some(&b"synced"[..]));
        assert_eq!(nominal.read("new"), None, "a file never synced is gone");
        let mut torn = disk.clone();
        let mut script = Script {
            faults: vec![Fault::TornWrite],
            values: vec![3, 5],
            ..Script::default()
        };
        torn.crash(&mut script);
        assert_eq!(torn.read("log"), Some(&b"synced-mo"[..]));
        assert_eq!(torn.read("new"), Some(&b"never"[..]));
        let mut lied = disk.clone();
        let mut lies = Script {
            faults: vec![Fault::FsyncLost],
            ..Script::default()
        };
        assert!(!lied.sync(&mut lies, "log", true));
        lied.crash(&mut Script::default());
        assert_eq!(
            lied.read("log"),
            Some(&b"synced"[..]),
            "the lost sync kept nothing new"
        );
    }

    #[test]
    fn a_clock_reading_steps_a_microsecond_or_jumps_on_a_high_byte() {
        let mut nominal = Script {
            values: vec![0],
            ..Script::default()
        };
        assert_eq!(clock::step(&mut nominal, "s", "j"), clock::STEP_NS);
        let mut jump = Script {
            values: vec![0xF0, 9],
            ..Script::default()
        };
        assert_eq!(clock::step(&mut jump, "s", "j"), 10_000_000_000);
        assert_eq!(jump.asked, ["s <256", "j <600"]);
    }

    #[test]
    fn partitions_cut_links_until_healed_and_the_nemesis_shapes_them() {
        let mut links = net::Links::default();
        links.cut(7, net::between(&[0], &[1, 2]));
        assert!(links.blocked(0, 2) && links.blocked(2, 0) && !links.blocked(1, 2));
        links.heal(7);
        assert!(!links.blocked(0, 2));
        let mut split = Script {
            faults: vec![Fault::NetworkPartition],
            values: vec![1, 0, 1, 1],
            ..Script::default()
        };
        let cut = nemesis::partition(&mut split, true, 3).expect("a partition");
        assert_eq!(
            cut.into_iter().collect::<Vec<_>>(),
            [(0, 1), (0, 2), (1, 0), (2, 0)]
        );
        assert_eq!(nemesis::partition(&mut Script::default(), true, 3), None);
        assert_eq!(
            nemesis::crash(&mut split, false, &[0, 1]),
            None,
            "crashes off"
        );
    }

    #[test]
    fn a_guest_recorder_takes_the_worlds_decisions_from_its_input() {
        let region = Arc::new(Region::new(Layout::default()));
        // Seed zero; then a step byte 0xF0 and a two-byte jump of 9.
        let input = [0, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0, 9];
        region.view().reset(&input, 0);
        let mut recorder = crate::protocol::Recorder::new(region.clone());
        assert_eq!(clock::step(&mut recorder, "s", "j"), 10_000_000_000);
        assert!(!recorder.fault(Fault::MessageDropped), "the tail is zeros");
        let decisions = region.view().decisions();
        assert_eq!(decisions.len(), 3);
        assert_eq!(decisions[0].kind, Kind::Below as u8);
        assert_eq!(decisions[2].kind, Kind::Fault as u8);
    }
}
