//! Pipes, eventfds and epoll instances: the files a runtime makes for
//! itself at start-up (Go's netpoller: epoll and a pipe to break its wait;
//! tokio's: epoll and an eventfd), with their readiness.
//!
//! Each file counts its references (descriptors pointing at it) so that a
//! pipe's reader sees its end once every writer is closed, and a
//! `generation` that grows with each write, so an edge-triggered interest
//! reports new data even when the file was already readable. Every change
//! of readiness sets `changed`, which the kernel's front reads to wake the
//! threads blocked in a wait ([`super::Outcome::Block`]).

use std::collections::{BTreeMap, VecDeque};

use super::File;

/// Bytes a pipe holds (Linux's default capacity).
pub const PIPE_CAPACITY: usize = 65_536;

/// `EPOLLET`: report an interest only when it becomes ready.
const EPOLLET: u32 = 1 << 31;
/// `EPOLLONESHOT`: report once, then disable until modified.
const EPOLLONESHOT: u32 = 1 << 30;
/// Readiness bits reported whether asked or not: EPOLLERR, EPOLLHUP.
const ALWAYS: u32 = 0x8 | 0x10;

#[derive(Debug, Clone, Default)]
pub struct Pipe {
    bytes: VecDeque<u8>,
    readers: u32,
    writers: u32,
    generation: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Event {
    count: u64,
    semaphore: bool,
    references: u32,
    generation: u64,
}

/// One interest of an epoll instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Interest {
    events: u32,
    data: u64,
    /// What was reported last time (edge-triggered), and the file's
    /// generation then.
    reported: u32,
    generation: u64,
    /// EPOLLONESHOT fired: silent until modified.
    disabled: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Epoll {
    /// By descriptor: a `BTreeMap`, so readiness is reported in one order.
    interests: BTreeMap<u64, Interest>,
    references: u32,
}

/// The call would wait (nothing to read, no room to write).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WouldWait;

/// Why a pipe write did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// The pipe is full: the write waits.
    Full,
    /// No reader is left: EPIPE (and SIGPIPE).
    Closed,
}

/// The process's pipes, eventfds and epoll instances.
#[derive(Debug, Clone, Default)]
pub struct Io {
    pipes: Vec<Pipe>,
    events: Vec<Event>,
    epolls: Vec<Epoll>,
    /// Some readiness changed since the front last looked.
    pub changed: bool,
}

impl Io {
    /// A new pipe with one reader and one writer.
    pub fn pipe(&mut self) -> usize {
        self.pipes.push(Pipe {
            readers: 1,
            writers: 1,
            ..Pipe::default()
        });
        self.pipes.len() - 1
    }

    pub fn eventfd(&mut self, initial: u64, semaphore: bool) -> usize {
        self.events.push(Event {
            count: initial & 0xFFFF_FFFF,
            semaphore,
            references: 1,
            generation: 0,
        });
        self.events.len() - 1
    }

    pub fn epoll(&mut self) -> usize {
        self.epolls.push(Epoll {
            references: 1,
            ..Epoll::default()
        });
        self.epolls.len() - 1
    }

    /// One more descriptor points at `file` (`dup`).
    pub fn share(&mut self, file: &File) {
        match *file {
            File::PipeRead(n) => self.pipes[n].readers += 1,
            File::PipeWrite(n) => self.pipes[n].writers += 1,
            File::Event(n) => self.events[n].references += 1,
            File::Epoll(n) => self.epolls[n].references += 1,
            _ => {}
        }
    }

    /// A descriptor pointing at `file` was closed.
    pub fn close(&mut self, file: &File) {
        match *file {
            File::PipeRead(n) => {
                debug_assert!(self.pipes[n].readers > 0);
                self.pipes[n].readers -= 1;
                self.changed = true;
            }
            File::PipeWrite(n) => {
                debug_assert!(self.pipes[n].writers > 0);
                self.pipes[n].writers -= 1;
                self.changed = true;
            }
            File::Event(n) => self.events[n].references -= 1,
            File::Epoll(n) => {
                let epoll = &mut self.epolls[n];
                epoll.references -= 1;
                if epoll.references == 0 {
                    epoll.interests.clear();
                }
            }
            _ => {}
        }
    }

    /// Reads up to `len` bytes of pipe `n`: `Err` when it would wait
    /// (empty, with a writer left); empty at its end.
    pub fn read_pipe(&mut self, n: usize, len: usize) -> Result<Vec<u8>, WouldWait> {
        let pipe = &mut self.pipes[n];
        if pipe.bytes.is_empty() {
            return if pipe.writers == 0 {
                Ok(Vec::new())
            } else {
                Err(WouldWait)
            };
        }
        let take = len.min(pipe.bytes.len());
        let out: Vec<u8> = pipe.bytes.drain(..take).collect();
        self.changed = true;
        Ok(out)
    }

    /// Writes what fits of `bytes` into pipe `n`: how many.
    pub fn write_pipe(&mut self, n: usize, bytes: &[u8]) -> Result<usize, Full> {
        let pipe = &mut self.pipes[n];
        if pipe.readers == 0 {
            return Err(Full::Closed);
        }
        let room = PIPE_CAPACITY - pipe.bytes.len();
        if room == 0 && !bytes.is_empty() {
            return Err(Full::Full);
        }
        let put = room.min(bytes.len());
        pipe.bytes.extend(&bytes[..put]);
        pipe.generation += 1;
        self.changed = true;
        Ok(put)
    }

    /// An eventfd read: its 8-byte value, or `Err` when it would wait.
    pub fn read_event(&mut self, n: usize) -> Result<Vec<u8>, WouldWait> {
        let event = &mut self.events[n];
        if event.count == 0 {
            return Err(WouldWait);
        }
        let value = if event.semaphore { 1 } else { event.count };
        event.count -= value;
        self.changed = true;
        Ok(value.to_le_bytes().to_vec())
    }

    /// An eventfd write of `value`: `Err` when it would wait (overflow).
    pub fn write_event(&mut self, n: usize, value: u64) -> Result<(), WouldWait> {
        let event = &mut self.events[n];
        if event.count.checked_add(value).is_none_or(|c| c == u64::MAX) {
            return Err(WouldWait);
        }
        event.count += value;
        event.generation += 1;
        self.changed = true;
        Ok(())
    }

    /// What a pipe or eventfd is ready for (poll's bits).
    pub fn ready(&self, file: &File) -> u32 {
        match *file {
            File::PipeRead(n) => {
                let pipe = &self.pipes[n];
                let data = if pipe.bytes.is_empty() { 0 } else { 0x1 };
                data | if pipe.writers == 0 { 0x10 } else { 0 }
            }
            File::PipeWrite(n) => {
                let pipe = &self.pipes[n];
                if pipe.readers == 0 {
                    0x8
                } else if pipe.bytes.len() < PIPE_CAPACITY {
                    0x4
                } else {
                    0
                }
            }
            File::Event(n) => {
                let event = &self.events[n];
                (if event.count > 0 { 0x1 } else { 0 })
                    | (if event.count < u64::MAX - 1 { 0x4 } else { 0 })
            }
            _ => unreachable!("the kernel answers for the others"),
        }
    }

    /// How many writes `file` has had (for edge-triggered interests).
    pub fn generation(&self, file: &File) -> u64 {
        match *file {
            File::PipeRead(n) | File::PipeWrite(n) => self.pipes[n].generation,
            File::Event(n) => self.events[n].generation,
            _ => 0,
        }
    }

    /// The descriptors epoll `n` watches, with the events asked.
    pub fn interests(&self, n: usize) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.epolls[n]
            .interests
            .iter()
            .filter(|(_, i)| !i.disabled)
            .map(|(&fd, i)| (fd, i.events | ALWAYS))
    }

    /// `epoll_ctl` on epoll `n`: add (1), delete (2) or modify (3) the
    /// interest in `fd`.
    pub fn control(&mut self, n: usize, op: u64, fd: u64, event: Option<(u32, u64)>) -> i64 {
        let interests = &mut self.epolls[n].interests;
        let fresh = |(events, data): (u32, u64)| Interest {
            events,
            data,
            reported: 0,
            generation: 0,
            disabled: false,
        };
        match (op, event) {
            (1, Some(event)) => {
                if interests.contains_key(&fd) {
                    return -17; // EEXIST
                }
                interests.insert(fd, fresh(event));
            }
            (2, _) => {
                if interests.remove(&fd).is_none() {
                    return -2; // ENOENT
                }
            }
            (3, Some(event)) => match interests.get_mut(&fd) {
                Some(interest) => *interest = fresh(event),
                None => return -2,
            },
            _ => return -22, // EINVAL
        }
        self.changed = true;
        0
    }

    /// The events epoll `n` reports now, at most `max`: `readiness` holds
    /// each watched descriptor's (fd, ready bits, generation).
    pub fn collect(
        &mut self,
        n: usize,
        readiness: &[(u64, u32, u64)],
        max: usize,
    ) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        for &(fd, ready, generation) in readiness {
            if out.len() == max {
                break;
            }
            let Some(interest) = self.epolls[n].interests.get_mut(&fd) else {
                continue;
            };
            let now = ready & (interest.events | ALWAYS);
            let report = if interest.events & EPOLLET != 0 {
                let new = now & !interest.reported != 0
                    || (now & 0x1 != 0 && generation != interest.generation);
                interest.reported = now;
                interest.generation = generation;
                new
            } else {
                now != 0
            };
            if report && now != 0 {
                out.push((now, interest.data));
                if interest.events & EPOLLONESHOT != 0 {
                    interest.disabled = true;
                }
            }
        }
        out
    }
}
