//! One server of the store: Raft's election and log replication, with the
//! state machine (a key-value map) applied from the committed log.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use dst::sim::{Either, net, select, time};
use serde::{Deserialize, Serialize};

use crate::{Bug, Msg, Op, SERVERS, server_name};

/// A log entry: the term it was created in and the client request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub term: u64,
    pub client: u32,
    pub seq: u64,
    pub op: Op,
}

/// What survives a crash: written to the node's disk and synced.
#[derive(Default, Serialize, Deserialize)]
struct Durable {
    /// Bumped on every write, to tell the newer of the two copies.
    version: u64,
    term: u64,
    voted_for: Option<u32>,
    log: Vec<Entry>,
}

/// An omniscient view across nodes (outside them, so it survives crashes):
/// the leader of each term, the entry applied at each index, and the terms
/// of each server's log as last written to its disk.
#[derive(Default)]
pub struct Observer {
    pub leaders: BTreeMap<u64, u32>,
    pub applied: BTreeMap<u64, Entry>,
    pub logs: BTreeMap<u32, Vec<u64>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Follower,
    Candidate,
    Leader,
}

const HEARTBEAT: Duration = Duration::from_millis(50);
const TICK: Duration = Duration::from_millis(10);
/// The durable state alternates between two files (by version), so a
/// crash that tears one write leaves the previous state whole in the
/// other. Each copy is `length ++ checksum ++ JSON`, so a torn copy is
/// recognized (a torn JSON text can still parse).
const COPIES: [&str; 2] = ["raft-state.a", "raft-state.b"];

fn checksum(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

fn encode(durable: &Durable) -> Vec<u8> {
    let json = serde_json::to_vec(durable).expect("serializable");
    let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&checksum(&json).to_le_bytes());
    bytes.extend_from_slice(&json);
    bytes
}

fn decode(bytes: &[u8]) -> Option<Durable> {
    let len = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?) as usize;
    let sum = u64::from_le_bytes(bytes.get(8..16)?.try_into().ok()?);
    let json = bytes.get(16..16usize.checked_add(len)?)?;
    (checksum(json) == sum).then(|| serde_json::from_slice(json).ok())?
}

/// The newest whole copy of the durable state (the default on a new disk).
fn load() -> Durable {
    COPIES
        .iter()
        .filter_map(|file| dst::sim::disk::read(file))
        .filter_map(|bytes| decode(&bytes))
        .max_by_key(|d| d.version)
        .unwrap_or_default()
}

/// One server's volatile state, rebuilt from its disk on every start.
pub struct Server {
    id: u32,
    bug: Bug,
    observer: Rc<RefCell<Observer>>,
    durable: Durable,
    role: Role,
    leader: Option<u32>,
    votes: u32,
    voters: Vec<bool>,
    commit: u64,
    applied: u64,
    kv: BTreeMap<String, String>,
    /// Per client: the last applied sequence number and its result.
    sessions: BTreeMap<u32, (u64, String)>,
    next_index: Vec<u64>,
    match_index: Vec<u64>,
    election_deadline: time::Instant,
}

impl Server {
    pub fn new(id: u32, bug: Bug, observer: Rc<RefCell<Observer>>) -> Server {
        let durable = load();
        Server {
            id,
            bug,
            observer,
            durable,
            role: Role::Follower,
            leader: None,
            votes: 0,
            voters: vec![false; SERVERS as usize],
            commit: 0,
            applied: 0,
            kv: BTreeMap::new(),
            sessions: BTreeMap::new(),
            next_index: vec![1; SERVERS as usize],
            match_index: vec![0; SERVERS as usize],
            election_deadline: time::Instant::default(),
        }
    }

    /// The server's one task: handle messages and timeouts forever.
    pub async fn run(mut self) {
        self.reset_election_timer();
        let mut ticks = time::interval(TICK);
        let mut next_send = time::now();
        loop {
            match select(net::recv::<Msg>(), ticks.tick()).await {
                Either::Left((from, msg)) => self.handle(from.index() as u32, msg).await,
                Either::Right(now) => {
                    if self.role != Role::Leader && now >= self.election_deadline {
                        self.start_election().await;
                        next_send = now + HEARTBEAT;
                    } else if self.role != Role::Follower && now >= next_send {
                        // Leaders send heartbeats; candidates ask again
                        // the peers that have not voted.
                        if self.role == Role::Leader {
                            self.broadcast_append();
                        } else {
                            self.request_votes();
                        }
                        next_send = now + HEARTBEAT;
                    }
                }
            }
        }
    }

    fn reset_election_timer(&mut self) {
        let jitter = Duration::from_millis(150 + dst::random::below(150));
        self.election_deadline = time::now() + jitter;
    }

    fn last_index(&self) -> u64 {
        self.durable.log.len() as u64
    }

    fn term_at(&self, index: u64) -> u64 {
        if index == 0 {
            0
        } else {
            self.durable.log[index as usize - 1].term
        }
    }

    /// Writes the durable state and syncs it. With the `vote` bug the vote
    /// is left out (it is kept in memory only).
    async fn persist(&mut self) {
        self.durable.version += 1;
        let terms = self.durable.log.iter().map(|e| e.term).collect();
        self.observer.borrow_mut().logs.insert(self.id, terms);
        let saved = if self.bug == Bug::Vote {
            encode(&Durable {
                version: self.durable.version,
                term: self.durable.term,
                voted_for: None,
                log: self.durable.log.clone(),
            })
        } else {
            encode(&self.durable)
        };
        let file = COPIES[(self.durable.version % 2) as usize];
        dst::sim::disk::replace(file, &saved);
        dst::sim::disk::sync(file).await;
    }

    async fn observe_term(&mut self, term: u64) {
        if term > self.durable.term {
            self.durable.term = term;
            self.durable.voted_for = None;
            self.role = Role::Follower;
            self.leader = None;
            self.persist().await;
        }
    }

    async fn start_election(&mut self) {
        self.durable.term += 1;
        self.durable.voted_for = Some(self.id);
        self.role = Role::Candidate;
        self.leader = None;
        self.votes = 1;
        self.voters = vec![false; SERVERS as usize];
        self.voters[self.id as usize] = true;
        self.persist().await;
        self.reset_election_timer();
        self.request_votes();
    }

    fn request_votes(&self) {
        let (last_index, last_term) = (self.last_index(), self.term_at(self.last_index()));
        for peer in self.peers().filter(|&p| !self.voters[p as usize]) {
            net::send(
                server_name(peer),
                Msg::RequestVote {
                    term: self.durable.term,
                    last_index,
                    last_term,
                },
            );
        }
    }

    fn peers(&self) -> impl Iterator<Item = u32> + use<> {
        let me = self.id;
        (0..SERVERS).filter(move |&p| p != me)
    }

    async fn handle(&mut self, from: u32, msg: Msg) {
        match msg {
            Msg::RequestVote {
                term,
                last_index,
                last_term,
            } => {
                self.observe_term(term).await;
                let up_to_date =
                    (last_term, last_index) >= (self.term_at(self.last_index()), self.last_index());
                let granted = term == self.durable.term
                    && up_to_date
                    && self.durable.voted_for.is_none_or(|v| v == from);
                if granted {
                    self.durable.voted_for = Some(from);
                    self.persist().await;
                    self.reset_election_timer();
                }
                net::send(
                    server_name(from),
                    Msg::Vote {
                        term: self.durable.term,
                        granted,
                    },
                );
            }
            Msg::Vote { term, granted } => {
                self.observe_term(term).await;
                if self.role == Role::Candidate
                    && term == self.durable.term
                    && granted
                    && !self.voters[from as usize]
                {
                    self.voters[from as usize] = true;
                    self.votes += 1;
                    if self.votes > SERVERS / 2 {
                        self.become_leader();
                    }
                }
            }
            Msg::Append {
                term,
                prev_index,
                prev_term,
                entries,
                commit,
            } => {
                self.observe_term(term).await;
                if term < self.durable.term {
                    let reply = Msg::AppendReply {
                        term: self.durable.term,
                        success: false,
                        match_index: 0,
                    };
                    net::send(server_name(from), reply);
                    return;
                }
                self.role = Role::Follower;
                self.leader = Some(from);
                self.reset_election_timer();
                let matches =
                    prev_index <= self.last_index() && self.term_at(prev_index) == prev_term;
                let mut match_index = 0;
                if matches {
                    let mut changed = false;
                    // Only what this message vouches for matches the
                    // leader's log (entries after it may be stale).
                    match_index = prev_index + entries.len() as u64;
                    for (i, entry) in entries.into_iter().enumerate() {
                        let index = prev_index + 1 + i as u64;
                        if index <= self.last_index() {
                            if self.term_at(index) == entry.term {
                                continue;
                            }
                            self.durable.log.truncate(index as usize - 1);
                        }
                        self.durable.log.push(entry);
                        changed = true;
                    }
                    if changed {
                        self.persist().await;
                    }
                    self.commit = self.commit.max(commit.min(match_index));
                    self.apply();
                }
                let reply = Msg::AppendReply {
                    term: self.durable.term,
                    success: matches,
                    match_index,
                };
                net::send(server_name(from), reply);
            }
            Msg::AppendReply {
                term,
                success,
                match_index,
            } => {
                self.observe_term(term).await;
                if self.role != Role::Leader || term != self.durable.term {
                    return;
                }
                let peer = from as usize;
                if success {
                    self.match_index[peer] = self.match_index[peer].max(match_index);
                    self.next_index[peer] = self.match_index[peer] + 1;
                    self.advance_commit();
                } else {
                    self.next_index[peer] = self.next_index[peer].saturating_sub(1).max(1);
                }
            }
            Msg::Request { client, seq, op } => self.request(client, seq, op).await,
            Msg::Reply { .. } => {}
        }
    }

    fn become_leader(&mut self) {
        self.role = Role::Leader;
        self.leader = Some(self.id);
        let term = self.durable.term;
        {
            let mut observer = self.observer.borrow_mut();
            let earlier = *observer.leaders.entry(term).or_insert(self.id);
            dst::assert_always!(
                earlier == self.id,
                "at most one leader per term",
                &serde_json::json!({ "term": term, "leaders": [earlier, self.id] })
            );
        }
        self.next_index = vec![self.last_index() + 1; SERVERS as usize];
        self.match_index = vec![0; SERVERS as usize];
        self.match_index[self.id as usize] = self.last_index();
        self.broadcast_append();
    }

    fn broadcast_append(&mut self) {
        for peer in self.peers() {
            let next = self.next_index[peer as usize];
            let prev_index = next - 1;
            let entries = self.durable.log[prev_index as usize..].to_vec();
            net::send(
                server_name(peer),
                Msg::Append {
                    term: self.durable.term,
                    prev_index,
                    prev_term: self.term_at(prev_index),
                    entries,
                    commit: self.commit,
                },
            );
        }
    }

    /// Commits the highest index a majority holds. Raft commits only
    /// entries of the current term this way (earlier ones follow); the
    /// `commit` bug counts replicas of any term.
    fn advance_commit(&mut self) {
        self.match_index[self.id as usize] = self.last_index();
        for n in (self.commit + 1..=self.last_index()).rev() {
            let replicas = self.match_index.iter().filter(|&&m| m >= n).count() as u32;
            let current = self.term_at(n) == self.durable.term;
            if replicas > SERVERS / 2 && (current || self.bug == Bug::Commit) {
                self.check_commit(n);
                self.commit = n;
                break;
            }
        }
        self.apply();
    }

    /// Raft's leader completeness, seen at the moment of commit: committing
    /// up to `upto` (an entry of term T) is safe only if no server holds an
    /// entry of a term above T at or before `upto`; such a server could be
    /// elected and overwrite the committed entries.
    fn check_commit(&self, upto: u64) {
        let term = self.term_at(upto);
        let observer = self.observer.borrow();
        let newer = observer.logs.iter().find_map(|(server, log)| {
            let (index, &t) = log
                .iter()
                .take(upto as usize)
                .enumerate()
                .find(|&(_, &t)| t > term)?;
            Some((server, index + 1, t))
        });
        dst::assert_always!(
            newer.is_none(),
            "no server holds a newer entry where one is committed",
            &serde_json::json!({
                "commit": upto,
                "term": term,
                "leader": self.id,
                "newer": newer.map(|(server, index, t)| { serde_json::json!({ "server": server, "index": index, "term": t }) }),
            })
        );
    }

    /// Applies committed entries to the map, and (as leader) answers their
    /// clients.
    fn apply(&mut self) {
        while self.applied < self.commit {
            self.applied += 1;
            let entry = self.durable.log[self.applied as usize - 1].clone();
            {
                let mut observer = self.observer.borrow_mut();
                let first = observer
                    .applied
                    .entry(self.applied)
                    .or_insert_with(|| entry.clone());
                dst::assert_always!(
                    *first == entry,
                    "every server applies the same entry at each index",
                    &serde_json::json!({ "index": self.applied, "first": format!("{first:?}"), "now": format!("{entry:?}") })
                );
            }
            let result = self.execute(&entry);
            if self.role == Role::Leader {
                net::send(
                    crate::client_name(entry.client),
                    Msg::Reply {
                        seq: entry.seq,
                        result: Ok(result),
                    },
                );
            }
        }
    }

    fn execute(&mut self, entry: &Entry) -> String {
        // A client has one request outstanding at a time: a sequence
        // number not above its last applied one is a retry.
        if self.bug != Bug::Retry
            && let Some((seq, result)) = self.sessions.get(&entry.client)
            && entry.seq <= *seq
        {
            return if entry.seq == *seq {
                result.clone()
            } else {
                String::new()
            };
        }
        let result = match &entry.op {
            Op::Get(k) => self.kv.get(k).cloned().unwrap_or_default(),
            Op::Put(k, v) => {
                self.kv.insert(k.clone(), v.clone());
                v.clone()
            }
            Op::Append(k, v) => {
                let value = self.kv.entry(k.clone()).or_default();
                value.push_str(v);
                value.clone()
            }
        };
        self.sessions
            .insert(entry.client, (entry.seq, result.clone()));
        result
    }

    async fn request(&mut self, client: u32, seq: u64, op: Op) {
        if self.role != Role::Leader {
            let reply = Msg::Reply {
                seq,
                result: Err(self.leader),
            };
            net::send(crate::client_name(client), reply);
            return;
        }
        if self.bug == Bug::StaleRead
            && let Op::Get(key) = &op
        {
            let value = self.kv.get(key).cloned().unwrap_or_default();
            net::send(
                crate::client_name(client),
                Msg::Reply {
                    seq,
                    result: Ok(value),
                },
            );
            return;
        }
        // A retry of a request already applied is answered from the
        // session; one already in the log waits for its commit.
        if self.bug != Bug::Retry
            && let Some((s, result)) = self.sessions.get(&client)
            && *s == seq
        {
            let reply = Msg::Reply {
                seq,
                result: Ok(result.clone()),
            };
            net::send(crate::client_name(client), reply);
            return;
        }
        let pending = self
            .durable
            .log
            .iter()
            .skip(self.applied as usize)
            .any(|e| e.client == client && e.seq == seq);
        if pending && self.bug != Bug::Retry {
            return;
        }
        self.durable.log.push(Entry {
            term: self.durable.term,
            client,
            seq,
            op,
        });
        self.persist().await;
        self.broadcast_append();
    }
}
