//! A small replicated key-value store on `dst::sim`: three servers elect a
//! leader and replicate a log (Raft-like: terms, votes, log matching,
//! commit by majority), two clients get, put and append with retries.
//! Crashes, partitions, pauses, lost and reordered messages and clock skew
//! come from the simulation's nemesis, as decisions.
//!
//! Four bugs can be seeded, one at a time ([`Bug`]):
//! - `vote`: a server replies to a vote request before its vote is on disk,
//!   so after a crash it can vote again in the same term: two leaders in
//!   one term;
//! - `commit`: a leader commits an entry of an earlier term by counting
//!   replicas (Raft's figure 8), so a committed entry can be overwritten;
//! - `stale_read`: a leader answers reads from its own state without
//!   confirming it still leads, so a deposed leader serves stale values;
//! - `retry`: servers do not remember which client requests they applied,
//!   so a client's retry of an append is applied twice.
//!
//! The properties: at most one leader per term, one entry per applied log
//! index, and no committed entry contradicted by a newer one on any server
//! (`always`, checked by an omniscient observer outside the nodes), and the
//! clients' history is linearizable (checked by `dst-oracles` at the end of
//! the run).

mod raft;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use dst::sim::{self, Config, Sim, net, time};
use dst_oracles::History;
use dst_oracles::models::{Kv, KvInput, KvOutput};
use serde::{Deserialize, Serialize};

pub use raft::{Observer, Server};

/// The seeded bug of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Bug {
    #[default]
    None,
    Vote,
    Commit,
    StaleRead,
    Retry,
}

impl Bug {
    /// `none`, `vote`, `commit`, `stale_read` or `retry`.
    pub fn from_name(name: &str) -> Bug {
        match name {
            "none" => Bug::None,
            "vote" => Bug::Vote,
            "commit" => Bug::Commit,
            "stale_read" => Bug::StaleRead,
            "retry" => Bug::Retry,
            other => panic!("unknown bug {other:?}: none, vote, commit, stale_read or retry"),
        }
    }
}

/// A client operation on the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    Get(String),
    Put(String, String),
    Append(String, String),
}

/// Every message of the cluster.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Msg {
    RequestVote {
        term: u64,
        last_index: u64,
        last_term: u64,
    },
    Vote {
        term: u64,
        granted: bool,
    },
    Append {
        term: u64,
        prev_index: u64,
        prev_term: u64,
        entries: Vec<raft::Entry>,
        commit: u64,
    },
    AppendReply {
        term: u64,
        success: bool,
        match_index: u64,
    },
    /// A client request: (client, sequence number) identifies it across
    /// retries.
    Request {
        client: u32,
        seq: u64,
        op: Op,
    },
    /// The value read (or the value after the write), or not the leader.
    Reply {
        seq: u64,
        result: Result<String, Option<u32>>,
    },
}

/// The cluster's size and the clients' workload.
pub const SERVERS: u32 = 3;
const CLIENTS: u32 = 2;
const OPS_PER_CLIENT: u32 = 4;
const KEYS: [&str; 2] = ["x", "y"];
/// How long a client waits for a reply before it tries another server.
const REQUEST_TIMEOUT: Duration = Duration::from_millis(100);
/// How long a client keeps retrying one operation before it gives up (its
/// outcome is then unknown).
const GIVE_UP: Duration = Duration::from_secs(2);

/// One simulated run of the cluster under `bug`; the properties are
/// checked as it goes and at its end.
pub fn simulate(bug: Bug) {
    let observer = Rc::new(RefCell::new(Observer::default()));
    let history: Rc<RefCell<History<KvInput, KvOutput>>> = Rc::new(RefCell::new(History::new()));
    let mut sim = Sim::with_config(Config {
        time_limit: Duration::from_secs(120),
        nemesis_every: Some(Duration::from_millis(50)),
        ..Config::default()
    });
    for id in 0..SERVERS {
        let observer = observer.clone();
        sim.server(&server_name(id), move || {
            raft::Server::new(id, bug, observer.clone()).run()
        });
    }
    for c in 0..CLIENTS {
        let history = history.clone();
        sim.client(&client_name(c), client(c, history));
    }
    let result = sim.run();
    dst::assert_always!(
        result.is_ok(),
        "the simulation ends: every client finishes",
        &result.as_ref().err().map(|e| e.to_string())
    );
    let verdict = history.borrow().check(&Kv);
    dst_oracles::assert_linearizable!(verdict, "the clients' history is linearizable");
    dst::assert_sometimes!(
        observer.borrow().leaders.len() > 1,
        "a second term elects a leader"
    );
}

/// The first finding of an in-process campaign: executions, seconds,
/// property and shrunk input.
pub struct Found {
    pub executions: u64,
    pub seconds: f64,
    pub property: String,
    pub input: Vec<u8>,
}

/// Explores `bug` in this process with explorer seed `seed` for at most
/// `runs` executions (stopping at the first finding if `stop`), in a fresh
/// temporary folder; returns the first finding and the executions and
/// seconds the campaign took. For the tests and the benchmark.
pub fn explore(bug: &'static str, seed: u64, runs: u64, stop: bool) -> (Option<Found>, u64, f64) {
    use dst_executors::InProcess;
    use dst_fuzz::explore::{Options, explore_here};
    // LibAFL's in-process executor hooks are per process: one campaign at
    // a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = std::env::temp_dir().join(format!(
        "dst-distributed-{bug}-{seed}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let mut options = Options::new(format!("raft_{bug}"), &dir);
    options.runs = Some(runs);
    options.seed = seed;
    options.timeout = Duration::from_secs(10);
    options.shrink_budget = 200;
    options.stop_on_finding = stop;
    let subject = InProcess::new(move || simulate(Bug::from_name(bug)));
    let summary = explore_here(subject, &options).expect("the campaign runs");
    let found = summary.findings.first().map(|f| Found {
        executions: f.executions,
        seconds: f.seconds,
        property: f.signature.to_string(),
        input: std::fs::read(f.path.join("input")).expect("the finding's input"),
    });
    let _ = std::fs::remove_dir_all(&dir);
    (found, summary.executions, summary.seconds)
}

/// The name of client `c`.
pub fn client_name(c: u32) -> String {
    format!("client{c}")
}

/// The name of server `id`.
pub fn server_name(id: u32) -> String {
    format!("n{id}")
}

async fn client(c: u32, history: Rc<RefCell<History<KvInput, KvOutput>>>) {
    let mut leader = 0u32;
    for seq in 1..=u64::from(OPS_PER_CLIENT) {
        let key = KEYS[dst::random::below(KEYS.len() as u64) as usize].to_string();
        let value = format!("{c}.{seq}");
        let op = match dst::random::below(3) {
            0 => Op::Append(key.clone(), value.clone()),
            1 => Op::Get(key.clone()),
            _ => Op::Put(key.clone(), value.clone()),
        };
        let input = match &op {
            Op::Get(k) => KvInput::Get {
                key: k.as_str().into(),
            },
            Op::Put(k, v) => KvInput::Put {
                key: k.as_str().into(),
                value: v.as_str().into(),
            },
            Op::Append(k, v) => KvInput::Append {
                key: k.as_str().into(),
                value: v.as_str().into(),
            },
        };
        let id = history.borrow_mut().invoke(
            u64::from(c),
            input,
            sim::time::global_now().as_nanos() as u64,
        );
        let started = time::now();
        let mut outcome = None;
        while started.elapsed() < GIVE_UP {
            net::send(
                server_name(leader).as_str(),
                Msg::Request {
                    client: c,
                    seq,
                    op: op.clone(),
                },
            );
            match time::timeout(REQUEST_TIMEOUT, reply_to(seq)).await {
                Ok(Ok(value)) => {
                    outcome = Some(value);
                    break;
                }
                Ok(Err(Some(hint))) => leader = hint,
                Ok(Err(None)) | Err(_) => leader = (leader + 1) % SERVERS,
            }
        }
        let now = sim::time::global_now().as_nanos() as u64;
        match outcome {
            Some(value) => {
                let output = match op {
                    Op::Get(_) => KvOutput::Value(value.into()),
                    _ => KvOutput::Ok,
                };
                history.borrow_mut().complete(id, output, now);
            }
            None => history.borrow_mut().unknown(id),
        }
    }
}

/// The next reply to request `seq` (replies to earlier requests, from
/// retries, are skipped).
async fn reply_to(seq: u64) -> Result<String, Option<u32>> {
    loop {
        if let (_, Msg::Reply { seq: s, result }) = net::recv::<Msg>().await
            && s == seq
        {
            return result;
        }
    }
}
