//! A session protocol over a network that reorders and duplicates messages.
//!
//! A client sends `Begin`, three `Write`s and `Commit`, each with a sequence
//! number; the network delivers in-flight messages in an order the explorer
//! chooses, and may duplicate a message (`fault!("network duplicates a
//! message")`), so a copy can arrive long after the original. The server drops duplicates by
//! remembering the last three sequence numbers it saw, and writes are
//! idempotent. Bug: a duplicate `Begin` delayed past that window restarts
//! the open transaction, so the commit loses the writes before it.

use std::collections::BTreeSet;

/// Messages from client to server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Message {
    Begin,
    Write(u32),
    Commit,
}

#[derive(Debug, Default)]
struct Server {
    /// The last sequence numbers seen (duplicate suppression window).
    recent: Vec<u32>,
    open: bool,
    buffer: BTreeSet<u32>,
    committed: Option<BTreeSet<u32>>,
}

const WINDOW: usize = 3;

impl Server {
    /// Handles one delivery; returns whether the message was accepted.
    fn receive(&mut self, seq: u32, message: Message) -> bool {
        if self.recent.contains(&seq) {
            dst::assert_sometimes!(true, "a duplicate is suppressed");
            return true;
        }
        let accepted = match message {
            Message::Begin => {
                if self.open && !self.buffer.is_empty() {
                    dst::assert_reachable!("a late duplicate begin arrives mid-transaction");
                }
                // Bug: an open transaction is restarted instead of kept.
                self.buffer.clear();
                self.open = true;
                true
            }
            Message::Write(v) if self.open => {
                self.buffer.insert(v);
                true
            }
            Message::Commit if self.open => {
                dst::assert_reachable!("server commits");
                self.committed = Some(std::mem::take(&mut self.buffer));
                self.open = false;
                true
            }
            // Before Begin: rejected, and the client resends it.
            Message::Write(_) | Message::Commit => false,
        };
        if accepted {
            self.recent.push(seq);
            if self.recent.len() > WINDOW {
                self.recent.remove(0);
            }
        }
        accepted
    }
}

/// Runs one session; returns what the server committed.
pub fn simulate() -> Option<BTreeSet<u32>> {
    let script = [
        Message::Begin,
        Message::Write(1),
        Message::Write(2),
        Message::Write(3),
        Message::Commit,
    ];
    let mut server = Server::default();
    // (sequence number, message) the network still holds. The client sends
    // in order, keeps at most two messages in flight, and sends Commit only
    // once every write was acknowledged.
    let mut in_flight: Vec<(u32, Message)> = Vec::new();
    let mut next = 0;
    let mut acked = 0;
    for _ in 0..40 {
        while in_flight.len() < 2
            && next < script.len()
            && (script[next] != Message::Commit || acked >= 3)
        {
            in_flight.push((next as u32, script[next]));
            next += 1;
        }
        if in_flight.is_empty() {
            break;
        }
        let pick = dst::random::below(in_flight.len() as u64) as usize;
        let (seq, message) = in_flight.remove(pick);
        if dst::fault!("network duplicates a message") {
            in_flight.push((seq, message));
        }
        let fresh = !server.recent.contains(&seq);
        if !server.receive(seq, message) {
            in_flight.push((seq, message));
        } else if fresh && matches!(message, Message::Write(_)) {
            acked += 1;
        }
        if let Some(committed) = &server.committed {
            dst::assert_always!(
                committed.len() == 3,
                "a commit keeps every acknowledged write",
                &serde_json::json!({ "committed": committed })
            );
            return Some(committed.clone());
        }
    }
    None
}
