//! One campaign across machines, on LLMP's broker-to-broker links.
//!
//! A node is one `--jobs N` campaign: its broker (this process) and its
//! clients. `--listen [ADDR:]PORT` makes it a hub; `--join HOST:PORT` makes
//! it a leaf of that hub (a star: no loops, and sender ids stay unique).
//! LLMP carries everything: the hub's public listener and the leaf's
//! `connect_b2b` link are LibAFL's own (each link is one more LLMP client
//! of the broker, and replays the other broker's whole history, so a node
//! that joins late gets the corpus). What is written here, and why:
//! - [`Bridge`], the first hook of the broker: LibAFL's broker hook counts
//!   and drops objectives, so findings would not travel; remote messages
//!   would show as clients of this node. The bridge passes remote events
//!   and local findings on under a tag the standard hook forwards
//!   untouched, drops inputs seen already (a re-join replays the history),
//!   and ignores nodes of another target.
//! - heartbeats ([`BEAT`]): a link that dies is silent in LLMP; each broker
//!   sends one a second, whose absence for [`LOST_AFTER`] tells a leaf to
//!   join again, every [`RETRY`], saying so in one line.
//! - [`Parent`]: `connect_b2b` tries once, and can block on a peer that
//!   accepts but does not speak LLMP: it is called only after a probe with
//!   time limits read the hub's hello.
//! - [`TakeFindings`]: one client per node re-runs a finding from another
//!   node (it shrinks it and writes it to this node's findings).
//!
//! LLMP has no authentication: a hub listens on loopback unless given an
//! address; nodes belong on a trusted network or an SSH tunnel.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::rc::Rc;
use std::time::{Duration, Instant};

use libafl::events::{Event, EventManagerHook, EventWithStats};
use libafl::inputs::BytesInput;
use libafl_bolts::ClientId;
use libafl_bolts::llmp::{
    Flags, LLMP_FLAG_FROM_B2B, LlmpBrokerInner, LlmpHook, LlmpMsgHookResult, Tag,
};
use libafl_bolts::shmem::{ShMem, ShMemProvider};

/// How a node takes part in a campaign across machines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Net {
    /// A hub: other nodes join at this address.
    Listen(SocketAddr),
    /// A leaf of the hub at HOST:PORT.
    Join(String),
}

/// A broker's heartbeat (one hop only: never forwarded).
pub(super) const BEAT: Tag = Tag(0xD57B_EA70);
/// An event passed on by the bridge: clients read it as any event; the
/// standard broker hook forwards it without counting it.
const SHARED: Tag = Tag(0xD57E_4E7D);
/// LibAFL's tag for events (`LLMP_TAG_EVENT_TO_BOTH`, crate-private in
/// libafl 0.16.1, which is pinned).
const EVENT: Tag = Tag(0x2B0741);
/// A link silent this long is gone.
pub(super) const LOST_AFTER: Duration = Duration::from_secs(15);
/// How often a leaf tries to reach its hub again.
pub(super) const RETRY: Duration = Duration::from_secs(5);

/// What a node announces in its heartbeats: the campaign (target and
/// catalog), its own name and its clients' executions so far.
pub(super) fn beat(campaign: &str, node: &str, executions: u64) -> Vec<u8> {
    let event = EventWithStats::<BytesInput>::with_current_time(
        Event::Log {
            severity_level: libafl::events::LogSeverity::Info,
            message: format!("dst-node {campaign} {node} {executions}"),
            phantom: std::marker::PhantomData,
        },
        0,
    );
    // A Log event always serializes.
    postcard::to_allocvec(&event).unwrap_or_default()
}

/// The campaign, node and executions a heartbeat names (executions 0 from
/// a node that does not say).
fn read_beat(bytes: &[u8]) -> Option<(String, String, u64)> {
    let event: EventWithStats<BytesInput> = postcard::from_bytes(bytes).ok()?;
    let Event::Log { message, .. } = event.event() else {
        return None;
    };
    let mut words = message.strip_prefix("dst-node ")?.split(' ');
    let (campaign, node) = (words.next()?, words.next()?);
    let executions = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
    Some((campaign.to_string(), node.to_string(), executions))
}

/// This node's name in other nodes' messages: host and process.
pub(super) fn node_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "node".into());
    format!("{host}/{}", std::process::id())
}

/// The campaign a node explores, as its heartbeats name it: the target's
/// name and a hash of its catalog (one word: no spaces).
pub(super) fn campaign_identity(name: &str, catalog: &[dst::catalog::SiteInfo]) -> String {
    let catalog = serde_json::to_vec(catalog).unwrap_or_default();
    let name: String = name
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect();
    format!("{name}-{:016x}", dst::hash::fnv64(&catalog))
}

/// A number that differs between nodes (host, process, time), mixed into
/// the explorer's seed so that nodes do not repeat each other's search.
pub(super) fn node_salt() -> u64 {
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    dst::hash::fnv64(format!("{} {time}", node_name()).as_bytes())
}

/// The other nodes this broker has links to, by link id.
pub(super) struct Peers {
    campaign: String,
    links: BTreeMap<ClientId, Peer>,
    /// Inputs and findings seen (hashes), to drop repeats.
    seen: HashSet<u64>,
}

struct Peer {
    name: String,
    last: Instant,
    foreign: bool,
    gone: bool,
    /// Executions its last heartbeat named, and its rate since the one
    /// before.
    executions: u64,
    exec_per_sec: f64,
}

impl Peer {
    /// A heartbeat at `now` naming `executions`. Beats that arrive close
    /// together (a link replaying a node's history) give no rate: the
    /// rate is over beats sent a second apart.
    fn heard(&mut self, executions: u64, now: Instant) {
        let seconds = now.saturating_duration_since(self.last).as_secs_f64();
        if self.executions > 0 && seconds >= 0.5 {
            // A node that started again counts from zero: no rate then.
            self.exec_per_sec = executions.saturating_sub(self.executions) as f64 / seconds;
        }
        self.executions = executions;
        self.last = now;
    }
}

impl Peers {
    pub(super) fn new(campaign: &str) -> Rc<RefCell<Peers>> {
        Rc::new(RefCell::new(Peers {
            campaign: campaign.to_string(),
            links: BTreeMap::new(),
            seen: HashSet::new(),
        }))
    }

    fn beat(&mut self, link: ClientId, bytes: &[u8]) {
        let Some((campaign, name, executions)) = read_beat(bytes) else {
            return;
        };
        let ours = campaign == self.campaign;
        let peer = self.links.entry(link).or_insert_with(|| {
            if ours {
                eprintln!("dst-fuzz: node {name} joined the campaign");
            } else {
                eprintln!(
                    "dst-fuzz: node {name} explores another target ({campaign}); ignoring it"
                );
            }
            Peer {
                name,
                last: Instant::now(),
                foreign: !ours,
                gone: false,
                executions: 0,
                exec_per_sec: 0.0,
            }
        });
        peer.heard(executions, Instant::now());
        if peer.gone && !peer.foreign {
            eprintln!("dst-fuzz: node {} is back", peer.name);
        }
        peer.gone = false;
    }

    /// Whether messages from `link` are taken: it said who it is (its
    /// first message) and explores this campaign.
    fn accepts(&self, link: ClientId) -> bool {
        self.links.get(&link).is_some_and(|p| !p.foreign)
    }

    /// When `link` was last heard from.
    pub(super) fn last_heard(&self, link: ClientId) -> Option<Instant> {
        self.links.get(&link).map(|p| p.last)
    }

    /// Nodes of this campaign heard from within [`LOST_AFTER`].
    fn live_peers(&self) -> impl Iterator<Item = &Peer> {
        self.links.values().filter(|p| !p.gone && !p.foreign)
    }

    /// How many nodes are live (for the status line).
    pub(super) fn live(&self) -> usize {
        self.live_peers().count()
    }

    /// The exec/s of the live nodes, summed.
    pub(super) fn exec_per_sec(&self) -> f64 {
        self.live_peers().map(|p| p.exec_per_sec).sum()
    }

    /// Says (once) which nodes have been silent for [`LOST_AFTER`].
    pub(super) fn report_gone(&mut self) {
        for peer in self.links.values_mut() {
            if !peer.gone && !peer.foreign && peer.last.elapsed() > LOST_AFTER {
                peer.gone = true;
                eprintln!(
                    "dst-fuzz: node {} is gone (no heartbeat for {}s); exploring on",
                    peer.name,
                    LOST_AFTER.as_secs()
                );
            }
        }
    }
}

/// The broker's first hook (see the module docs).
pub(super) struct Bridge {
    pub(super) peers: Rc<RefCell<Peers>>,
}

impl<SHM, SP> LlmpHook<SHM, SP> for Bridge {
    fn on_new_message(
        &mut self,
        _broker: &mut LlmpBrokerInner<SHM, SP>,
        client_id: ClientId,
        tag: &mut Tag,
        flags: &mut Flags,
        msg: &mut [u8],
        _new_msgs: &mut Vec<(Tag, Flags, Vec<u8>)>,
    ) -> Result<LlmpMsgHookResult, libafl::Error> {
        let remote = *flags & LLMP_FLAG_FROM_B2B == LLMP_FLAG_FROM_B2B;
        let mut peers = self.peers.borrow_mut();
        if *tag == BEAT {
            if remote {
                peers.beat(client_id, msg);
            }
            return Ok(LlmpMsgHookResult::Handled);
        }
        if remote && !peers.accepts(client_id) {
            return Ok(LlmpMsgHookResult::Handled);
        }
        if *tag != EVENT && *tag != SHARED {
            return Ok(if remote {
                LlmpMsgHookResult::Handled
            } else {
                LlmpMsgHookResult::ForwardToClients
            });
        }
        let Ok(event) = postcard::from_bytes::<EventWithStats<BytesInput>>(msg) else {
            return Ok(if remote {
                LlmpMsgHookResult::Handled
            } else {
                LlmpMsgHookResult::ForwardToClients
            });
        };
        let (input, finding) = match event.event() {
            Event::NewTestcase { input, .. } => (Some(input), false),
            Event::Objective {
                input: Some(input), ..
            } => (Some(input), true),
            // Each node stops on its own terms (`--stop-on-finding`,
            // budgets): another node's stop stays there.
            Event::Stop if remote => return Ok(LlmpMsgHookResult::Handled),
            _ => (None, false),
        };
        if let Some(input) = input {
            let fresh = peers
                .seen
                .insert(dst::hash::fnv64(input.as_ref()) ^ u64::from(finding));
            if remote && !fresh {
                return Ok(LlmpMsgHookResult::Handled);
            }
        }
        if remote || finding {
            *tag = SHARED;
        }
        Ok(LlmpMsgHookResult::ForwardToClients)
    }
}

/// A leaf's link to its hub: joins, notices when the hub goes silent, and
/// joins again.
pub(super) struct Parent {
    peer: String,
    link: Option<(ClientId, Instant)>,
    next_try: Instant,
    said_unreachable: bool,
}

impl Parent {
    pub(super) fn new(peer: &str) -> Parent {
        Parent {
            peer: peer.to_string(),
            link: None,
            next_try: Instant::now(),
            said_unreachable: false,
        }
    }

    /// Called from the broker's loop: (re)joins when due.
    pub(super) fn tend<SHM, SP>(&mut self, broker: &mut LlmpBrokerInner<SHM, SP>, peers: &Peers)
    where
        SHM: ShMem,
        SP: ShMemProvider<ShMem = SHM>,
    {
        if let Some((link, joined)) = self.link {
            let heard = peers.last_heard(link).unwrap_or(joined);
            if heard.elapsed() > LOST_AFTER {
                self.link = None;
                self.next_try = Instant::now();
                self.said_unreachable = false;
            }
            return;
        }
        if Instant::now() < self.next_try {
            return;
        }
        self.next_try = Instant::now() + RETRY;
        let joined = probe(&self.peer).and_then(|addr| {
            let link = broker.peek_next_client_id();
            broker
                .connect_b2b(addr)
                .map(|()| link)
                .map_err(|e| e.to_string())
        });
        match joined {
            Ok(link) => {
                eprintln!("dst-fuzz: joined the campaign at {}", self.peer);
                self.link = Some((link, Instant::now()));
                self.said_unreachable = false;
            }
            Err(why) => {
                if !self.said_unreachable {
                    eprintln!(
                        "dst-fuzz: cannot reach {}: {why}; exploring alone, retrying every {}s",
                        self.peer,
                        RETRY.as_secs()
                    );
                    self.said_unreachable = true;
                }
            }
        }
    }
}

/// Resolves `peer` and checks, with time limits, that an LLMP broker
/// answers there (its listener greets first); returns its address.
fn probe(peer: &str) -> Result<SocketAddr, String> {
    let addr = peer
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve it ({e})"))?
        .next()
        .ok_or_else(|| "it resolves to no address".to_string())?;
    let mut stream =
        TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map_err(|e| format!("{e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| format!("{e}"))?;
    let mut size = [0u8; 4];
    let read = stream.read_exact(&mut size).and_then(|()| {
        let size = u32::from_be_bytes(size) as usize;
        if size > 1 << 16 {
            return Err(std::io::Error::other("not a dst node"));
        }
        let mut hello = vec![0u8; size];
        stream.read_exact(&mut hello).map(|()| hello)
    });
    match read {
        Ok(hello)
            if postcard::from_bytes::<libafl_bolts::llmp::TcpResponse>(&hello).is_ok_and(|r| {
                matches!(
                    r,
                    libafl_bolts::llmp::TcpResponse::BrokerConnectHello { .. }
                )
            }) =>
        {
            Ok(addr)
        }
        Ok(_) => Err("it answered, but not as a dst node".into()),
        Err(e) => Err(format!("no answer from a dst node there ({e})")),
    }
}

/// A client's event hook: only the node's first client takes findings, and
/// only those of other nodes (links have ids above the local clients').
#[derive(Debug, Clone, Copy)]
pub(super) struct TakeFindings {
    takes: bool,
    local_clients: u32,
}

impl TakeFindings {
    pub(super) fn new(client: usize, local_clients: usize) -> TakeFindings {
        TakeFindings {
            takes: client == 1,
            local_clients: local_clients as u32,
        }
    }
}

impl<I, S> EventManagerHook<I, S> for TakeFindings {
    fn pre_receive(
        &mut self,
        _state: &mut S,
        client_id: ClientId,
        event: &EventWithStats<I>,
    ) -> Result<bool, libafl::Error> {
        Ok(match event.event() {
            Event::Objective { .. } => self.takes && client_id.0 > self.local_clients,
            _ => true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_beat_names_its_campaign_node_and_executions() {
        let bytes = beat("bank-1f2e", "host/42", 1234);
        assert_eq!(
            read_beat(&bytes),
            Some(("bank-1f2e".to_string(), "host/42".to_string(), 1234))
        );
        assert_eq!(read_beat(b"\xff\x00junk"), None);
        // A node that does not say its executions (an earlier version).
        let older = EventWithStats::<BytesInput>::with_current_time(
            Event::Log {
                severity_level: libafl::events::LogSeverity::Info,
                message: "dst-node bank-1f2e host/7".into(),
                phantom: std::marker::PhantomData,
            },
            0,
        );
        let older = postcard::to_allocvec(&older).unwrap();
        assert_eq!(
            read_beat(&older),
            Some(("bank-1f2e".to_string(), "host/7".to_string(), 0))
        );
    }

    #[test]
    fn a_peers_rate_is_the_executions_between_its_last_two_beats() {
        let start = Instant::now();
        let mut peer = Peer {
            name: "host/1".into(),
            last: start,
            foreign: false,
            gone: false,
            executions: 0,
            exec_per_sec: 0.0,
        };
        peer.heard(5_000, start + Duration::from_millis(500));
        assert_eq!(peer.exec_per_sec, 0.0, "one beat gives no rate");
        peer.heard(8_000, start + Duration::from_millis(1500));
        assert_eq!(peer.exec_per_sec, 3_000.0);
        peer.heard(9_000, start + Duration::from_millis(3500));
        assert_eq!(peer.exec_per_sec, 500.0);
        // A replayed history: beats a moment apart leave the rate alone.
        peer.heard(90_000, start + Duration::from_millis(3501));
        assert_eq!(peer.exec_per_sec, 500.0);
        peer.heard(91_000, start + Duration::from_millis(4501));
        assert_eq!(peer.exec_per_sec, 1_000.0);
        // Started again: fewer executions than before, no negative rate.
        peer.heard(100, start + Duration::from_millis(5501));
        assert_eq!(peer.exec_per_sec, 0.0);
    }

    #[test]
    fn findings_go_to_the_first_client_from_other_nodes_only() {
        let finding = EventWithStats::<BytesInput>::with_current_time(
            Event::Objective {
                input: Some(BytesInput::new(vec![1])),
                objective_size: 1,
            },
            0,
        );
        let mut state = ();
        let mut first = TakeFindings::new(1, 2);
        let mut second = TakeFindings::new(2, 2);
        assert!(
            first
                .pre_receive(&mut state, ClientId(3), &finding)
                .unwrap()
        );
        assert!(
            !first
                .pre_receive(&mut state, ClientId(2), &finding)
                .unwrap()
        );
        assert!(
            !second
                .pre_receive(&mut state, ClientId(3), &finding)
                .unwrap()
        );
    }

    #[test]
    fn a_probe_of_a_port_that_is_not_a_node_fails_in_one_line() {
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = silent.local_addr().unwrap();
        let talker = std::thread::spawn(move || {
            let (mut stream, _) = silent.accept().unwrap();
            use std::io::Write;
            let _ = stream.write_all(b"\x00\x00\x00\x05HTTP/");
        });
        let err = probe(&addr.to_string()).unwrap_err();
        talker.join().unwrap();
        assert!(err.contains("not as a dst node"), "{err}");
        assert!(!err.contains('\n'));
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        assert!(probe(&closed.to_string()).is_err());
    }
}
