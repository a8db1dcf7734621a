//! Sockets: TCP and UDP over IPv4 and IPv6 and Unix stream sockets.
//!
//! Within the node they meet over its loopback (any address of its own:
//! 127.0.0.1, ::1, 0.0.0.0, and its address in a cluster): a connect finds
//! a listener at once and the accepted end waits in its backlog; bytes
//! written to one end are in the other's inbox at once, in order (a
//! loopback loses nothing).
//!
//! Between the nodes of a cluster (the node has an address, [`Net::ip`]),
//! what a socket sends to another node's address is a [`Packet`] in the
//! node's outbox; the cluster carries it, with the world's latency and
//! faults, and hands it to the other node's [`Net::deliver`]. A TCP
//! connection is a `Wire` socket at each end: a connect sends `Syn` and
//! waits (EINPROGRESS when non-blocking) for `Accepted` or `Refused`; data
//! and the end of a stream are `Data` and `Fin`; a peer node's crash resets
//! its connections ([`Net::reset_from`]). Only the cluster knows where an
//! address is; a node by itself (no address) refuses every connect to
//! another one. There is no flow control between nodes: a send never
//! waits for the peer to read.
//!
//! Ephemeral ports are handed out from 40000 up, so every run binds the
//! same ones.

use std::collections::VecDeque;

use super::Guest;

/// A socket address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addr {
    Inet { v6: bool, ip: [u8; 16], port: u16 },
    Unix(Vec<u8>),
}

const AF_UNIX: u16 = 1;
const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;

impl Addr {
    /// Reads a `sockaddr` of `len` bytes at `at`.
    pub fn read(guest: &impl Guest, at: u64, len: u64) -> Result<Addr, i64> {
        let mut bytes = vec![0u8; len.min(128) as usize];
        guest.read(at, &mut bytes).map_err(|_| super::EFAULT)?;
        if bytes.len() < 2 {
            return Err(super::EINVAL);
        }
        let family = u16::from_le_bytes([bytes[0], bytes[1]]);
        match family {
            AF_INET if bytes.len() >= 8 => {
                let mut ip = [0u8; 16];
                ip[10] = 0xFF;
                ip[11] = 0xFF;
                ip[12..].copy_from_slice(&bytes[4..8]);
                Ok(Addr::Inet {
                    v6: false,
                    ip,
                    port: u16::from_be_bytes([bytes[2], bytes[3]]),
                })
            }
            AF_INET6 if bytes.len() >= 24 => {
                let mut ip = [0u8; 16];
                ip.copy_from_slice(&bytes[8..24]);
                Ok(Addr::Inet {
                    v6: true,
                    ip,
                    port: u16::from_be_bytes([bytes[2], bytes[3]]),
                })
            }
            AF_UNIX => {
                let path = &bytes[2..];
                let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
                Ok(Addr::Unix(path[..end].to_vec()))
            }
            _ => Err(-97), // EAFNOSUPPORT
        }
    }

    /// The `sockaddr` bytes of this address.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Addr::Inet {
                v6: false,
                ip,
                port,
            } => {
                let mut out = vec![0u8; 16];
                out[..2].copy_from_slice(&AF_INET.to_le_bytes());
                out[2..4].copy_from_slice(&port.to_be_bytes());
                out[4..8].copy_from_slice(&ip[12..]);
                out
            }
            Addr::Inet { v6: true, ip, port } => {
                let mut out = vec![0u8; 28];
                out[..2].copy_from_slice(&AF_INET6.to_le_bytes());
                out[2..4].copy_from_slice(&port.to_be_bytes());
                out[8..24].copy_from_slice(ip);
                out
            }
            Addr::Unix(path) => {
                let mut out = AF_UNIX.to_le_bytes().to_vec();
                out.extend_from_slice(path);
                out.push(0);
                out
            }
        }
    }

    /// Writes this address to (`at`, `len_at`) as `accept`, `recvfrom`
    /// and `getsockname` do (truncated to the caller's length, which is
    /// set to the full one).
    pub fn write_to(&self, guest: &mut impl Guest, at: u64, len_at: u64) -> Result<(), i64> {
        if at == 0 || len_at == 0 {
            return Ok(());
        }
        let room = guest.load::<4>(len_at).map_err(|_| super::EFAULT)? as usize;
        let bytes = self.bytes();
        guest
            .write(at, &bytes[..room.min(bytes.len())])
            .map_err(|_| super::EFAULT)?;
        guest
            .write(len_at, &(bytes.len() as u32).to_le_bytes())
            .map_err(|_| super::EFAULT)
    }

    /// Whether a connect to `self` reaches a socket bound to `bound`: the
    /// same port at one of the node's own addresses (`own`: its address
    /// in a cluster) where the socket listens (its address, or any), or
    /// the same path. A socket bound to 127.0.0.1 is not reached from
    /// another node, as on Linux.
    fn reaches(&self, bound: &Addr, own: Option<&[u8; 16]>) -> bool {
        match (self, bound) {
            (
                Addr::Inet { port: a, ip, .. },
                Addr::Inet {
                    port: b, ip: at, ..
                },
            ) => a == b && local(ip, own) && (unspecified(at) || at == ip),
            (Addr::Unix(a), Addr::Unix(b)) => a == b,
            _ => false,
        }
    }
}

/// Whether `ip` (IPv6, or IPv4 mapped) is the any address (0.0.0.0, ::).
fn unspecified(ip: &[u8; 16]) -> bool {
    *ip == [0; 16] || *ip == ipv4([0, 0, 0, 0])
}

/// Whether `ip` (IPv6, or IPv4 mapped) is the node's own: loopback, any,
/// or `own`.
fn local(ip: &[u8; 16], own: Option<&[u8; 16]>) -> bool {
    let v4 = ip[..10].iter().all(|&b| b == 0) && ip[10] == 0xFF && ip[11] == 0xFF;
    own == Some(ip)
        || if v4 {
            ip[12] == 127 || ip[12..] == [0, 0, 0, 0]
        } else {
            ip[..15].iter().all(|&b| b == 0) && (ip[15] == 1 || ip[15] == 0)
        }
}

/// A socket's state.
#[derive(Debug, Clone)]
pub enum State {
    /// Made by `socket`, maybe bound.
    Fresh,
    /// Listening: connections waiting to be accepted (socket ids).
    Listener { backlog: VecDeque<usize> },
    /// A connected stream: its peer's socket id, its inbox.
    Stream {
        peer: usize,
        inbox: VecDeque<u8>,
        /// This end will write no more (`shutdown`), the peer's end is
        /// closed or shut for writing.
        write_shut: bool,
        peer_done: bool,
    },
    /// A datagram socket: its inbox of (sender, bytes).
    Datagram { inbox: VecDeque<(Addr, Vec<u8>)> },
    /// A stream to a socket of another node: the peer's socket id there
    /// (`None` while connecting), its inbox and ends as for `Stream`.
    Wire {
        peer: Option<usize>,
        inbox: VecDeque<u8>,
        write_shut: bool,
        peer_done: bool,
        /// A pending error (`SO_ERROR`): the connect refused, the
        /// connection reset.
        error: i64,
        /// A connect's result, once, for the blocking connect that waits
        /// for it (0, or ECONNREFUSED).
        connected: Option<i64>,
    },
}

/// What one node sends another: from a socket at `from` to `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    pub from: Addr,
    pub to: Addr,
    pub segment: Segment,
}

/// A packet's meaning; socket ids are the sending (`src`) or receiving
/// (`dst`) node's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// A connect from socket `src`, to whatever listens at `to`.
    Syn {
        src: usize,
    },
    /// The listener accepted: its new socket is `src`, the connecting one
    /// `dst`.
    Accepted {
        src: usize,
        dst: usize,
    },
    /// No listener at the address.
    Refused {
        dst: usize,
    },
    Data {
        dst: usize,
        bytes: Vec<u8>,
    },
    /// The sender will send no more (closed or shut for writing).
    Fin {
        dst: usize,
    },
    Datagram(Vec<u8>),
    /// A stream's data or accept met no socket that expected it (closed,
    /// or its node exited): the connection from the packet's `to` to its
    /// `from` is reset, as TCP's RST does. Matched by the two addresses: the
    /// sender of the segment it answers may have no id left to name.
    Reset,
}

impl Packet {
    /// What a node answers a stream segment that meets no socket: a
    /// connect is refused, a connection's segment resets it; nothing
    /// answers a refusal, a reset or a datagram (so no two answers chase
    /// each other).
    pub fn unanswered(&self) -> Option<Packet> {
        let segment = match self.segment {
            Segment::Syn { src } => Segment::Refused { dst: src },
            Segment::Accepted { .. } | Segment::Data { .. } => Segment::Reset,
            // A FIN for a closed socket is acknowledged, as a closing
            // connection's is (FIN_WAIT, TIME_WAIT): no reset.
            Segment::Fin { .. }
            | Segment::Refused { .. }
            | Segment::Reset
            | Segment::Datagram(_) => return None,
        };
        Some(Packet {
            from: self.to.clone(),
            to: self.from.clone(),
            segment,
        })
    }
}

impl Segment {
    /// Whether the segment belongs to a stream, which a network delivers
    /// in order and without loss (TCP's retransmissions) or not at all.
    pub fn is_stream(&self) -> bool {
        !matches!(self, Segment::Datagram(_))
    }
}

/// Whether two socket addresses are the same endpoint (an IPv4 address and
/// its IPv6-mapped form alike).
fn same_endpoint(a: &Addr, b: &Addr) -> bool {
    match (a, b) {
        (Addr::Inet { ip: x, port: p, .. }, Addr::Inet { ip: y, port: q, .. }) => x == y && p == q,
        (a, b) => a == b,
    }
}

/// The IPv4 address `a.b.c.d` in the kernel's IPv6-mapped form.
pub fn ipv4(octets: [u8; 4]) -> [u8; 16] {
    let mut ip = [0u8; 16];
    ip[10] = 0xFF;
    ip[11] = 0xFF;
    ip[12..].copy_from_slice(&octets);
    ip
}

#[derive(Debug, Clone)]
pub struct Socket {
    pub stream: bool,
    pub family: u16,
    pub local: Option<Addr>,
    /// A stream's peer address, or a datagram socket's connected one.
    pub remote: Option<Addr>,
    pub state: State,
    references: u32,
    /// How many arrivals it has had (for edge-triggered interests).
    pub generation: u64,
}

impl Socket {
    /// Resets a connection to another node (a connect in progress is
    /// refused); whether this socket is one.
    fn reset(&mut self) -> bool {
        let State::Wire {
            error,
            peer_done,
            write_shut,
            connected,
            ..
        } = &mut self.state
        else {
            return false;
        };
        *error = -104; // ECONNRESET
        *peer_done = true;
        // Nothing more leaves it (a write is EPIPE, a close sends no FIN):
        // a stale segment could meet a new connection between the same
        // two addresses.
        *write_shut = true;
        if connected.is_none() {
            *connected = Some(-111);
        }
        self.generation += 1;
        true
    }
}

/// The node's sockets.
#[derive(Debug, Clone, Default)]
pub struct Net {
    sockets: Vec<Socket>,
    next_port: u16,
    /// Some readiness changed since the front last looked.
    pub changed: bool,
    /// The node's address in a cluster (IPv4 mapped), if it is a node of
    /// one: sockets to other addresses then go through [`Net::outbox`].
    pub ip: Option<[u8; 16]>,
    /// Packets for other nodes, which the cluster takes and carries.
    pub outbox: Vec<Packet>,
}

/// What a receive got: the bytes, and who sent them.
pub type Received = (Vec<u8>, Option<Addr>);

/// Bytes a socket's inbox holds before writers wait.
const BUFFER: usize = 1 << 18;

impl Net {
    /// `socket(domain, type)`: its id.
    pub fn socket(&mut self, family: u16, stream: bool) -> Result<usize, i64> {
        if !matches!(family, AF_UNIX | AF_INET | AF_INET6) {
            return Err(-97); // EAFNOSUPPORT
        }
        if family == AF_UNIX && !stream {
            return Err(-94); // ESOCKTNOSUPPORT: Unix datagrams are not here
        }
        let state = if stream {
            State::Fresh
        } else {
            State::Datagram {
                inbox: VecDeque::new(),
            }
        };
        self.sockets.push(Socket {
            stream,
            family,
            local: None,
            remote: None,
            state,
            references: 1,
            generation: 0,
        });
        Ok(self.sockets.len() - 1)
    }

    /// `socketpair(domain, type)`: two connected stream sockets (Unix
    /// ones, as Linux has them).
    pub fn pair(&mut self, family: u16, stream: bool) -> Result<[usize; 2], i64> {
        if family != AF_UNIX {
            return Err(-95); // EOPNOTSUPP
        }
        if !stream {
            return Err(-94); // ESOCKTNOSUPPORT: Unix datagrams are not here
        }
        let first = self.sockets.len();
        for peer in [first + 1, first] {
            self.sockets.push(Socket {
                stream: true,
                family,
                local: Some(Addr::Unix(Vec::new())),
                remote: Some(Addr::Unix(Vec::new())),
                state: State::Stream {
                    peer,
                    inbox: VecDeque::new(),
                    write_shut: false,
                    peer_done: false,
                },
                references: 1,
                generation: 0,
            });
        }
        Ok([first, first + 1])
    }

    pub fn get(&self, id: usize) -> &Socket {
        &self.sockets[id]
    }

    pub fn share(&mut self, id: usize) {
        self.sockets[id].references += 1;
    }

    /// A descriptor of socket `id` was closed: with the last one, its peer
    /// sees the end, its waiting connections are reset.
    pub fn close(&mut self, id: usize) {
        let socket = &mut self.sockets[id];
        socket.references -= 1;
        if socket.references > 0 {
            return;
        }
        if let State::Wire {
            peer: Some(peer),
            write_shut: false,
            ..
        } = socket.state
        {
            self.send_packet(id, Segment::Fin { dst: peer });
        }
        let socket = &mut self.sockets[id];
        let state = std::mem::replace(&mut socket.state, State::Fresh);
        socket.local = None;
        match state {
            State::Stream { peer, .. } => self.peer_done(peer),
            State::Listener { backlog } => {
                for waiting in backlog {
                    self.close(waiting);
                }
            }
            _ => {}
        }
        self.changed = true;
    }

    /// Puts a packet from socket `id` to its peer in the outbox.
    fn send_packet(&mut self, id: usize, segment: Segment) {
        let socket = &self.sockets[id];
        let (Some(from), Some(to)) = (socket.local.clone(), socket.remote.clone()) else {
            debug_assert!(false, "a wire socket has both ends");
            return;
        };
        self.outbox.push(Packet { from, to, segment });
    }

    /// This node's own address, with `port`: where its packets come from.
    fn own(&self, port: u16) -> Addr {
        Addr::Inet {
            v6: false,
            ip: self.ip.unwrap_or(ipv4([127, 0, 0, 1])),
            port,
        }
    }

    /// Whether `to` is another node's address (this node has one).
    fn remote(&self, to: &Addr) -> bool {
        match to {
            Addr::Inet { ip, .. } => self.ip.is_some() && !local(ip, self.ip.as_ref()),
            Addr::Unix(_) => false,
        }
    }

    /// A packet from another node arrives (the cluster calls this).
    pub fn deliver(&mut self, packet: Packet) {
        let wire = |s: &Socket, peer_known: bool| {
            s.references > 0
                && s.local
                    .as_ref()
                    .is_some_and(|l| same_endpoint(l, &packet.to))
                && s.remote
                    .as_ref()
                    .is_some_and(|r| same_endpoint(r, &packet.from))
                && matches!(s.state, State::Wire { peer, .. } if peer.is_some() == peer_known)
        };
        // (Below, a segment for a socket is for one that expects it.)
        let expected = match &packet.segment {
            Segment::Accepted { dst, .. } => {
                let dst = *dst;
                self.sockets.get(dst).is_some_and(|s| wire(s, false))
                    && matches!(
                        self.sockets[dst].state,
                        State::Wire {
                            connected: None,
                            ..
                        }
                    )
            }
            Segment::Data { dst, .. } | Segment::Fin { dst } => {
                self.sockets.get(*dst).is_some_and(|s| wire(s, true))
            }
            Segment::Refused { dst } => self.sockets.get(*dst).is_some_and(|s| wire(s, false)),
            _ => true,
        };
        if !expected {
            self.outbox.extend(packet.unanswered());
            return;
        }
        let Packet { from, to, segment } = packet;
        match segment {
            Segment::Syn { src } => {
                let Some(listener) = self.listener_at(&to) else {
                    self.outbox.push(Packet {
                        from: to,
                        to: from,
                        segment: Segment::Refused { dst: src },
                    });
                    return;
                };
                let port = match &to {
                    Addr::Inet { port, .. } => *port,
                    Addr::Unix(_) => 0,
                };
                self.sockets.push(Socket {
                    stream: true,
                    family: self.sockets[listener].family,
                    local: Some(self.own(port)),
                    remote: Some(from.clone()),
                    state: State::Wire {
                        peer: Some(src),
                        inbox: VecDeque::new(),
                        write_shut: false,
                        peer_done: false,
                        error: 0,
                        connected: None,
                    },
                    references: 1,
                    generation: 0,
                });
                let accepted = self.sockets.len() - 1;
                if let State::Listener { backlog } = &mut self.sockets[listener].state {
                    backlog.push_back(accepted);
                }
                self.sockets[listener].generation += 1;
                self.outbox.push(Packet {
                    from: self.own(port),
                    to: from,
                    segment: Segment::Accepted {
                        src: accepted,
                        dst: src,
                    },
                });
            }
            Segment::Accepted { src, dst } => {
                if let State::Wire {
                    peer, connected, ..
                } = &mut self.sockets[dst].state
                {
                    *peer = Some(src);
                    *connected = Some(0);
                    self.sockets[dst].generation += 1;
                }
            }
            Segment::Refused { dst } => {
                if let State::Wire {
                    error, connected, ..
                } = &mut self.sockets[dst].state
                {
                    *error = -111; // ECONNREFUSED
                    *connected = Some(-111);
                    self.sockets[dst].generation += 1;
                }
            }
            Segment::Data { dst, bytes } => {
                if let State::Wire { inbox, .. } = &mut self.sockets[dst].state {
                    inbox.extend(&bytes);
                    self.sockets[dst].generation += 1;
                }
            }
            Segment::Fin { dst } => {
                if let State::Wire { peer_done, .. } = &mut self.sockets[dst].state {
                    *peer_done = true;
                    self.sockets[dst].generation += 1;
                }
            }
            Segment::Datagram(bytes) => self.datagram_to(from, &to, bytes),
            Segment::Reset => {
                for socket in &mut self.sockets {
                    let ours = socket.references > 0
                        && socket.local.as_ref().is_some_and(|l| same_endpoint(l, &to))
                        && socket
                            .remote
                            .as_ref()
                            .is_some_and(|r| same_endpoint(r, &from));
                    if ours {
                        socket.reset();
                    }
                }
            }
        }
        self.changed = true;
    }

    /// A datagram from `from` arrives at the socket of this node bound to
    /// `to`, if one is (else it is lost, as on a network).
    fn datagram_to(&mut self, from: Addr, to: &Addr, bytes: Vec<u8>) {
        let own = self.ip;
        let target = (0..self.sockets.len()).find(|&s| {
            let socket = &self.sockets[s];
            !socket.stream
                && socket.references > 0
                && socket
                    .local
                    .as_ref()
                    .is_some_and(|b| to.reaches(b, own.as_ref()))
        });
        if let Some(target) = target
            && let State::Datagram { inbox } = &mut self.sockets[target].state
        {
            inbox.push_back((from, bytes));
            self.sockets[target].generation += 1;
            self.changed = true;
        }
    }

    /// The socket listening where a connect to `to` arrives.
    fn listener_at(&self, to: &Addr) -> Option<usize> {
        let own = self.ip;
        (0..self.sockets.len()).find(|&l| {
            let s = &self.sockets[l];
            s.references > 0
                && matches!(s.state, State::Listener { .. })
                && s.local
                    .as_ref()
                    .is_some_and(|b| to.reaches(b, own.as_ref()))
        })
    }

    /// The node at `ip` crashed: this node's connections to it are reset.
    pub fn reset_from(&mut self, ip: &[u8; 16]) {
        for socket in &mut self.sockets {
            let to_it = matches!(&socket.remote, Some(Addr::Inet { ip: r, .. }) if r == ip);
            if to_it && socket.reset() {
                self.changed = true;
            }
        }
    }

    /// The program ended: every connection to another node is closed
    /// (its peer reads the end), as the kernel closes a dead process's
    /// descriptors.
    pub fn hang_up(&mut self) {
        for id in 0..self.sockets.len() {
            if let State::Wire {
                peer: Some(peer),
                write_shut: false,
                ..
            } = self.sockets[id].state
                && self.sockets[id].references > 0
            {
                self.send_packet(id, Segment::Fin { dst: peer });
                if let State::Wire { write_shut, .. } = &mut self.sockets[id].state {
                    *write_shut = true;
                }
            }
        }
    }

    /// Takes socket `id`'s pending error (`SO_ERROR`, negative).
    pub fn take_error(&mut self, id: usize) -> i64 {
        match &mut self.sockets[id].state {
            State::Wire { error, .. } => std::mem::take(error),
            _ => 0,
        }
    }

    fn peer_done(&mut self, id: usize) {
        if let State::Stream { peer_done, .. } = &mut self.sockets[id].state {
            *peer_done = true;
            self.sockets[id].generation += 1;
        }
    }

    fn ephemeral(&mut self) -> u16 {
        let port = 40000 + self.next_port;
        self.next_port = self.next_port.wrapping_add(1) % 20000;
        port
    }

    fn in_use(&self, addr: &Addr, stream: bool) -> bool {
        self.sockets.iter().any(|s| {
            s.stream == stream
                && s.references > 0
                && s.local.as_ref().is_some_and(|l| match (l, addr) {
                    (Addr::Inet { port: a, .. }, Addr::Inet { port: b, .. }) => a == b,
                    (a, b) => a == b,
                })
                && !matches!(s.state, State::Stream { .. } | State::Wire { .. })
        })
    }

    /// `bind`: port 0 takes an ephemeral port.
    pub fn bind(&mut self, id: usize, mut addr: Addr) -> i64 {
        if self.sockets[id].local.is_some() {
            return super::EINVAL;
        }
        if let Addr::Inet { port: 0, .. } = addr {
            let port = self.ephemeral();
            if let Addr::Inet { port: p, .. } = &mut addr {
                *p = port;
            }
        }
        if self.in_use(&addr, self.sockets[id].stream) {
            return -98; // EADDRINUSE
        }
        self.sockets[id].local = Some(addr);
        0
    }

    fn any_addr(&mut self, family: u16) -> Addr {
        let port = self.ephemeral();
        let mut ip = [0u8; 16];
        if family == AF_INET {
            ip[10] = 0xFF;
            ip[11] = 0xFF;
            ip[12] = 127;
            ip[15] = 1;
        } else {
            ip[15] = 1;
        }
        Addr::Inet {
            v6: family == AF_INET6,
            ip,
            port,
        }
    }

    pub fn listen(&mut self, id: usize) -> i64 {
        let socket = &self.sockets[id];
        if !socket.stream {
            return -95; // EOPNOTSUPP
        }
        match socket.state {
            State::Fresh => {}
            State::Listener { .. } => return 0,
            _ => return super::EINVAL,
        }
        if socket.local.is_none() {
            if socket.family == AF_UNIX {
                return super::EINVAL;
            }
            let addr = self.any_addr(self.sockets[id].family);
            self.sockets[id].local = Some(addr);
        }
        self.sockets[id].state = State::Listener {
            backlog: VecDeque::new(),
        };
        0
    }

    /// `connect`: a stream reaches a listener at once (ECONNREFUSED
    /// without one); a datagram socket remembers its peer.
    pub fn connect(&mut self, id: usize, to: Addr) -> i64 {
        let stream = self.sockets[id].stream;
        if self.sockets[id].local.is_none() && self.sockets[id].family != AF_UNIX {
            // Bound to the address its packets leave from: a datagram
            // socket connected to another node, the node's own.
            let addr = if !stream && self.remote(&to) {
                let port = self.ephemeral();
                self.own(port)
            } else {
                self.any_addr(self.sockets[id].family)
            };
            self.sockets[id].local = Some(addr);
        }
        if !stream {
            self.sockets[id].remote = Some(to);
            return 0;
        }
        match &mut self.sockets[id].state {
            State::Fresh => {}
            State::Wire {
                connected, peer, ..
            } => {
                return match connected.take() {
                    Some(result) => result,
                    None if peer.is_none() => -114, // EALREADY
                    None => -106,                   // EISCONN
                };
            }
            State::Stream { .. } => return -106, // EISCONN
            _ => return super::EINVAL,
        }
        if self.remote(&to) {
            // To another node: a Syn, and the answer later.
            let port = match &self.sockets[id].local {
                Some(Addr::Inet { port, .. }) => *port,
                _ => self.ephemeral(),
            };
            self.sockets[id].local = Some(self.own(port));
            self.sockets[id].remote = Some(to);
            self.sockets[id].state = State::Wire {
                peer: None,
                inbox: VecDeque::new(),
                write_shut: false,
                peer_done: false,
                error: 0,
                connected: None,
            };
            self.send_packet(id, Segment::Syn { src: id });
            return -115; // EINPROGRESS
        }
        let Some(listener) = self.listener_at(&to) else {
            return -111; // ECONNREFUSED
        };
        let server_local = self.sockets[listener].local.clone();
        let client_local = self.sockets[id]
            .local
            .clone()
            .unwrap_or(Addr::Unix(Vec::new()));
        self.sockets.push(Socket {
            stream: true,
            family: self.sockets[listener].family,
            local: server_local,
            remote: Some(client_local),
            state: State::Stream {
                peer: id,
                inbox: VecDeque::new(),
                write_shut: false,
                peer_done: false,
            },
            references: 1,
            generation: 0,
        });
        let accepted = self.sockets.len() - 1;
        self.sockets[id].remote = Some(to);
        self.sockets[id].state = State::Stream {
            peer: accepted,
            inbox: VecDeque::new(),
            write_shut: false,
            peer_done: false,
        };
        if let State::Listener { backlog } = &mut self.sockets[listener].state {
            backlog.push_back(accepted);
        }
        self.sockets[listener].generation += 1;
        self.changed = true;
        0
    }

    /// `accept`: the oldest waiting connection (`None`: none waits).
    pub fn accept(&mut self, id: usize) -> Result<Option<usize>, i64> {
        match &mut self.sockets[id].state {
            State::Listener { backlog } => Ok(backlog.pop_front()),
            _ => Err(super::EINVAL),
        }
    }

    /// Sends on socket `id` (to `to` for a datagram): `Ok(None)` when it
    /// would wait; `Err(-32)` is EPIPE (the caller sends SIGPIPE).
    pub fn send(
        &mut self,
        id: usize,
        bytes: &[u8],
        to: Option<Addr>,
    ) -> Result<Option<usize>, i64> {
        match self.sockets[id].state {
            State::Stream {
                peer, write_shut, ..
            } => {
                if write_shut {
                    return Err(-32);
                }
                let peer_alive = self.sockets[peer].references > 0;
                let State::Stream { inbox, .. } = &mut self.sockets[peer].state else {
                    return Err(-32);
                };
                if !peer_alive {
                    return Err(-32);
                }
                let room = BUFFER.saturating_sub(inbox.len());
                if room == 0 && !bytes.is_empty() {
                    return Ok(None);
                }
                let put = room.min(bytes.len());
                inbox.extend(&bytes[..put]);
                self.sockets[peer].generation += 1;
                self.changed = true;
                Ok(Some(put))
            }
            State::Wire {
                peer,
                write_shut,
                error,
                ..
            } => {
                if error != 0 {
                    return Err(error);
                }
                if write_shut {
                    return Err(-32);
                }
                let Some(peer) = peer else {
                    return Ok(None); // still connecting
                };
                let segment = Segment::Data {
                    dst: peer,
                    bytes: bytes.to_vec(),
                };
                self.send_packet(id, segment);
                Ok(Some(bytes.len()))
            }
            State::Datagram { .. } => {
                let Some(to) = to.or_else(|| self.sockets[id].remote.clone()) else {
                    return Err(-89); // EDESTADDRREQ
                };
                if self.sockets[id].local.is_none() {
                    // Bound at its first send, as Linux does: to the any
                    // address (an answer to any of the node's addresses
                    // reaches it) and a port of its own.
                    let family = self.sockets[id].family;
                    let port = self.ephemeral();
                    let ip = if family == AF_INET6 {
                        [0; 16]
                    } else {
                        ipv4([0, 0, 0, 0])
                    };
                    self.sockets[id].local = Some(Addr::Inet {
                        v6: family == AF_INET6,
                        ip,
                        port,
                    });
                }
                let from = self.sockets[id].local.clone().expect("bound above");
                if self.remote(&to) {
                    let port = match from {
                        Addr::Inet { port, .. } => port,
                        Addr::Unix(_) => 0,
                    };
                    self.outbox.push(Packet {
                        from: self.own(port),
                        to,
                        segment: Segment::Datagram(bytes.to_vec()),
                    });
                    return Ok(Some(bytes.len()));
                }
                // A datagram to no one is lost, as on a network.
                self.datagram_to(from, &to, bytes.to_vec());
                Ok(Some(bytes.len()))
            }
            _ => Err(-107), // ENOTCONN
        }
    }

    /// Receives up to `len` bytes (`peek`: leaves them): `Ok(None)` when
    /// it would wait; a stream's end is an empty read.
    pub fn receive(&mut self, id: usize, len: usize, peek: bool) -> Result<Option<Received>, i64> {
        let remote = self.sockets[id].remote.clone();
        match &mut self.sockets[id].state {
            State::Wire {
                inbox,
                error,
                peer_done,
                peer,
                ..
            } if inbox.is_empty() && (*error != 0 || peer.is_none()) => {
                if *error != 0 {
                    Err(std::mem::take(error))
                } else if *peer_done {
                    Ok(Some((Vec::new(), remote)))
                } else {
                    Ok(None)
                }
            }
            State::Stream {
                inbox, peer_done, ..
            }
            | State::Wire {
                inbox, peer_done, ..
            } => {
                if inbox.is_empty() {
                    return Ok(if *peer_done {
                        Some((Vec::new(), remote))
                    } else {
                        None
                    });
                }
                let take = len.min(inbox.len());
                let out: Vec<u8> = if peek {
                    inbox.iter().take(take).copied().collect()
                } else {
                    inbox.drain(..take).collect()
                };
                if !peek {
                    self.changed = true;
                }
                Ok(Some((out, remote)))
            }
            State::Datagram { inbox } => {
                let Some((from, bytes)) = (if peek {
                    inbox.front().cloned()
                } else {
                    inbox.pop_front()
                }) else {
                    return Ok(None);
                };
                let mut bytes = bytes;
                bytes.truncate(len);
                Ok(Some((bytes, Some(from))))
            }
            _ => Err(-107), // ENOTCONN
        }
    }

    /// `shutdown(how)`: SHUT_RD 0, SHUT_WR 1, SHUT_RDWR 2.
    pub fn shutdown(&mut self, id: usize, how: u64) -> i64 {
        if let State::Wire {
            peer, write_shut, ..
        } = &mut self.sockets[id].state
        {
            let peer = *peer;
            if how >= 1 && !*write_shut {
                *write_shut = true;
                if let Some(peer) = peer {
                    self.send_packet(id, Segment::Fin { dst: peer });
                }
            }
            self.changed = true;
            return 0;
        }
        let State::Stream {
            peer, write_shut, ..
        } = &mut self.sockets[id].state
        else {
            return -107;
        };
        let peer = *peer;
        if how >= 1 {
            *write_shut = true;
            self.peer_done(peer);
        }
        self.changed = true;
        0
    }

    /// What socket `id` is ready for (poll's bits; EPOLLRDHUP 0x2000).
    pub fn ready(&self, id: usize) -> u32 {
        let socket = &self.sockets[id];
        match &socket.state {
            State::Fresh => 0x4,
            State::Listener { backlog } => u32::from(!backlog.is_empty()),
            State::Stream {
                inbox,
                peer_done,
                write_shut,
                peer,
            } => {
                let mut bits = 0;
                if !inbox.is_empty() || *peer_done {
                    bits |= 0x1;
                }
                if *peer_done {
                    bits |= 0x2000;
                }
                let peer_alive = self.sockets[*peer].references > 0;
                if !write_shut && peer_alive {
                    bits |= 0x4;
                } else if !peer_alive {
                    bits |= 0x8 | 0x10;
                }
                bits
            }
            State::Datagram { inbox } => 0x4 | u32::from(!inbox.is_empty()),
            State::Wire {
                peer,
                inbox,
                write_shut,
                peer_done,
                error,
                ..
            } => {
                if *error != 0 {
                    return 0x1 | 0x4 | 0x8 | 0x10 | 0x2000;
                }
                if peer.is_none() {
                    return 0;
                }
                let mut bits = 0;
                if !inbox.is_empty() || *peer_done {
                    bits |= 0x1;
                }
                if *peer_done {
                    bits |= 0x2000;
                }
                if !write_shut {
                    bits |= 0x4;
                }
                bits
            }
        }
    }
}

use super::{Context, EBADF, EFAULT, File, Kernel, Outcome};

const SOCK_NONBLOCK: u64 = 0o4000;
const MSG_PEEK: u64 = 2;
const MSG_DONTWAIT: u64 = 0x40;
const MSG_NOSIGNAL: u64 = 0x4000;

impl Kernel {
    fn socket_of(&self, fd: u64) -> Result<usize, i64> {
        match self.file(fd) {
            Some(File::Socket(id)) => Ok(*id),
            Some(_) => Err(-88), // ENOTSOCK
            None => Err(EBADF),
        }
    }

    /// The socket calls; `None` for any other.
    pub(super) fn socket_call(
        &mut self,
        guest: &mut impl Guest,
        ctx: &Context,
        number: u64,
        a: [u64; 6],
    ) -> Option<Outcome> {
        let id = |k: &Kernel| k.socket_of(a[0]);
        let r = match number {
            198 => {
                // socket(domain, type, protocol)
                let kind = a[1] & 0xF;
                if kind != 1 && kind != 2 {
                    return Some(Outcome::Return(-94)); // ESOCKTNOSUPPORT
                }
                match self.net.socket(a[0] as u16, kind == 1) {
                    Ok(s) => self.install(File::Socket(s), a[1] & SOCK_NONBLOCK != 0),
                    Err(e) => e,
                }
            }
            199 => {
                // socketpair(domain, type, protocol, fds)
                let kind = a[1] & 0xF;
                if kind != 1 && kind != 2 {
                    return Some(Outcome::Return(-94)); // ESOCKTNOSUPPORT
                }
                match self.net.pair(a[0] as u16, kind == 1) {
                    Ok([one, two]) => {
                        let files = [File::Socket(one), File::Socket(two)];
                        self.install_pair(guest, files, a[1] & SOCK_NONBLOCK != 0, a[3])
                    }
                    Err(e) => e,
                }
            }
            200 | 203 => {
                // bind(fd, addr, len), connect(fd, addr, len)
                match id(self).and_then(|s| Addr::read(guest, a[1], a[2]).map(|addr| (s, addr))) {
                    Ok((s, addr)) if number == 200 => self.net.bind(s, addr),
                    Ok((s, addr)) => match self.net.connect(s, addr) {
                        // A blocking connect to another node waits for
                        // its answer, and asks again when woken.
                        -115 | -114 if !self.open(a[0]).is_some_and(|o| o.nonblock) => {
                            return Some(self.wait(ctx, None));
                        }
                        result => result,
                    },
                    Err(e) => e,
                }
            }
            201 => id(self).map_or_else(|e| e, |s| self.net.listen(s)),
            202 | 242 => {
                // accept(fd, addr, len), accept4(fd, addr, len, flags)
                let s = match id(self) {
                    Ok(s) => s,
                    Err(e) => return Some(Outcome::Return(e)),
                };
                match self.net.accept(s) {
                    Ok(Some(conn)) => {
                        let flags = if number == 242 { a[3] } else { 0 };
                        let fd = self.install(File::Socket(conn), flags & SOCK_NONBLOCK != 0);
                        if fd >= 0
                            && let Some(peer) = self.net.get(conn).remote.clone()
                            && let Err(e) = peer.write_to(guest, a[1], a[2])
                        {
                            return Some(Outcome::Return(e));
                        }
                        fd
                    }
                    Ok(None) if self.open(a[0]).is_some_and(|o| o.nonblock) => super::EAGAIN,
                    Ok(None) => return Some(self.wait(ctx, None)),
                    Err(e) => e,
                }
            }
            204 | 205 => {
                // getsockname, getpeername(fd, addr, len)
                match id(self) {
                    Ok(s) => {
                        let socket = self.net.get(s);
                        let addr = if number == 204 {
                            socket.local.clone()
                        } else {
                            socket.remote.clone()
                        };
                        match addr {
                            Some(addr) => {
                                addr.write_to(guest, a[1], a[2]).map_or_else(|e| e, |()| 0)
                            }
                            None if number == 205 => -107, // ENOTCONN
                            None => {
                                let family = socket.family;
                                let any = Addr::Inet {
                                    v6: family == AF_INET6,
                                    ip: [0; 16],
                                    port: 0,
                                };
                                any.write_to(guest, a[1], a[2]).map_or_else(|e| e, |()| 0)
                            }
                        }
                    }
                    Err(e) => e,
                }
            }
            206 => {
                // sendto(fd, buf, len, flags, addr, addrlen)
                let to = if a[4] != 0 {
                    match Addr::read(guest, a[4], a[5]) {
                        Ok(addr) => Some(addr),
                        Err(e) => return Some(Outcome::Return(e)),
                    }
                } else {
                    None
                };
                let mut bytes = vec![0u8; a[2].min(1 << 20) as usize];
                if guest.read(a[1], &mut bytes).is_err() {
                    return Some(Outcome::Return(EFAULT));
                }
                return Some(self.send(ctx, a[0], &bytes, to, a[3]));
            }
            207 => {
                // recvfrom(fd, buf, len, flags, addr, addrlen)
                return Some(self.receive(guest, ctx, a[0], &[(a[1], a[2])], a[3], (a[4], a[5])));
            }
            208 => id(self).map_or_else(|e| e, |_| 0), // setsockopt: taken
            209 => {
                // getsockopt(fd, level, name, value, len): SO_TYPE, else 0
                match id(self) {
                    Ok(s) => {
                        let value: u32 = match (a[1], a[2]) {
                            (1, 3) => {
                                if self.net.get(s).stream {
                                    1
                                } else {
                                    2
                                }
                            }
                            // SO_ERROR: the pending error, taken.
                            (1, 4) => self.net.take_error(s).unsigned_abs() as u32,
                            _ => 0,
                        };
                        let ok = guest.write(a[3], &value.to_le_bytes()).is_ok()
                            && guest.write(a[4], &4u32.to_le_bytes()).is_ok();
                        if ok { 0 } else { EFAULT }
                    }
                    Err(e) => e,
                }
            }
            210 => id(self).map_or_else(|e| e, |s| self.net.shutdown(s, a[1])),
            211 | 212 => {
                // sendmsg, recvmsg(fd, msghdr, flags): name, namelen,
                // iov, iovlen, control, controllen, flags
                let header = |k: u64| guest.load::<8>(a[1] + 8 * k);
                let (Ok(name), Ok(namelen), Ok(iov), Ok(iovlen)) =
                    (header(0), header(1), header(2), header(3))
                else {
                    return Some(Outcome::Return(EFAULT));
                };
                let mut parts = Vec::new();
                for k in 0..iovlen.min(64) {
                    let (Ok(base), Ok(len)) = (
                        guest.load::<8>(iov + 16 * k),
                        guest.load::<8>(iov + 16 * k + 8),
                    ) else {
                        return Some(Outcome::Return(EFAULT));
                    };
                    parts.push((base, len));
                }
                if number == 211 {
                    let to = if name != 0 {
                        match Addr::read(guest, name, namelen & 0xFFFF_FFFF) {
                            Ok(addr) => Some(addr),
                            Err(e) => return Some(Outcome::Return(e)),
                        }
                    } else {
                        None
                    };
                    let mut bytes = Vec::new();
                    for (base, len) in parts {
                        let mut part = vec![0u8; len.min(1 << 20) as usize];
                        if guest.read(base, &mut part).is_err() {
                            return Some(Outcome::Return(EFAULT));
                        }
                        bytes.extend_from_slice(&part);
                    }
                    return Some(self.send(ctx, a[0], &bytes, to, a[2]));
                }
                // The control data is empty; the name's length is set.
                let _ = guest.write(a[1] + 40, &0u64.to_le_bytes());
                return Some(self.receive(guest, ctx, a[0], &parts, a[2], (name, a[1] + 8)));
            }
            _ => return None,
        };
        Some(Outcome::Return(r))
    }

    /// Sends `bytes` on `fd`'s socket (EPIPE also raises SIGPIPE unless
    /// MSG_NOSIGNAL).
    pub(super) fn send(
        &mut self,
        ctx: &Context,
        fd: u64,
        bytes: &[u8],
        to: Option<Addr>,
        flags: u64,
    ) -> Outcome {
        let s = match self.socket_of(fd) {
            Ok(s) => s,
            Err(e) => return Outcome::Return(e),
        };
        match self.net.send(s, bytes, to) {
            Ok(Some(n)) => Outcome::Return(n as i64),
            Ok(None) if flags & MSG_DONTWAIT != 0 || self.open(fd).is_some_and(|o| o.nonblock) => {
                Outcome::Return(super::EAGAIN)
            }
            Ok(None) => self.wait(ctx, None),
            Err(-32) if flags & MSG_NOSIGNAL == 0 => match self.signals.send(ctx.tid, 13) {
                Outcome::Return(_) => Outcome::Return(-32),
                other => other,
            },
            Err(e) => Outcome::Return(e),
        }
    }

    /// Receives into `parts` (buffers in order) from `fd`'s socket, the
    /// sender to `from` (address, length pointers; zeros: not asked).
    pub(super) fn receive(
        &mut self,
        guest: &mut impl Guest,
        ctx: &Context,
        fd: u64,
        parts: &[(u64, u64)],
        flags: u64,
        from: (u64, u64),
    ) -> Outcome {
        let s = match self.socket_of(fd) {
            Ok(s) => s,
            Err(e) => return Outcome::Return(e),
        };
        let want: u64 = parts.iter().map(|p| p.1).sum();
        match self
            .net
            .receive(s, want.min(1 << 20) as usize, flags & MSG_PEEK != 0)
        {
            Ok(Some((bytes, sender))) => {
                let mut at = 0;
                for &(base, len) in parts {
                    let n = (len as usize).min(bytes.len() - at);
                    if guest.write(base, &bytes[at..at + n]).is_err() {
                        return Outcome::Return(EFAULT);
                    }
                    at += n;
                }
                if let Some(sender) = sender
                    && let Err(e) = sender.write_to(guest, from.0, from.1)
                {
                    return Outcome::Return(e);
                }
                Outcome::Return(bytes.len() as i64)
            }
            Ok(None) if flags & MSG_DONTWAIT != 0 || self.open(fd).is_some_and(|o| o.nonblock) => {
                Outcome::Return(super::EAGAIN)
            }
            Ok(None) => self.wait(ctx, None),
            Err(e) => Outcome::Return(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two nodes, 10.0.0.1 (a client) and 10.0.0.2 (listening on 7000).
    fn nodes() -> (Net, Net, usize) {
        let client = Net {
            ip: Some(ipv4([10, 0, 0, 1])),
            ..Net::default()
        };
        let mut server = Net {
            ip: Some(ipv4([10, 0, 0, 2])),
            ..Net::default()
        };
        let listener = server.socket(AF_INET, true).unwrap();
        assert_eq!(server.bind(listener, server_addr()), 0);
        assert_eq!(server.listen(listener), 0);
        (client, server, listener)
    }

    fn server_addr() -> Addr {
        Addr::Inet {
            v6: false,
            ip: ipv4([10, 0, 0, 2]),
            port: 7000,
        }
    }

    /// Delivers what `from` sent to `to`; how many packets.
    fn carry(from: &mut Net, to: &mut Net) -> usize {
        let packets = std::mem::take(&mut from.outbox);
        let n = packets.len();
        for packet in packets {
            to.deliver(packet);
        }
        n
    }

    #[test]
    fn data_for_a_closed_socket_resets_the_connection_it_came_on() {
        let (mut client, mut server, listener) = nodes();
        let c = client.socket(AF_INET, true).unwrap();
        assert_eq!(client.connect(c, server_addr()), -115);
        carry(&mut client, &mut server); // the Syn
        let accepted = server.accept(listener).unwrap().unwrap();
        carry(&mut server, &mut client); // the Accepted
        assert_eq!(client.connect(c, server_addr()), 0);
        // The server closes; the client, not yet reading its end, writes.
        server.close(accepted);
        carry(&mut server, &mut client); // the Fin
        assert_eq!(client.send(c, b"late", None), Ok(Some(4)));
        carry(&mut client, &mut server); // the data meets a closed socket
        assert_eq!(server.outbox.len(), 1);
        assert_eq!(server.outbox[0].segment, Segment::Reset);
        carry(&mut server, &mut client);
        assert_eq!(client.receive(c, 16, false), Err(-104));
        // A reset end sends nothing more: a write is EPIPE, a close no FIN.
        assert_eq!(client.send(c, b"more", None), Err(-32));
        let from = client.get(c).local.clone().unwrap();
        client.close(c);
        assert!(client.outbox.is_empty());
        // Nothing answers a reset, nor a FIN for a closed socket (it is
        // acknowledged): no packets chase each other.
        for segment in [Segment::Reset, Segment::Fin { dst: accepted }] {
            server.deliver(Packet {
                from: from.clone(),
                to: server_addr(),
                segment,
            });
            assert!(server.outbox.is_empty());
        }
    }

    #[test]
    fn a_connect_given_up_before_its_answer_resets_the_accepted_end() {
        let (mut client, mut server, listener) = nodes();
        let c = client.socket(AF_INET, true).unwrap();
        assert_eq!(client.connect(c, server_addr()), -115);
        carry(&mut client, &mut server);
        let accepted = server.accept(listener).unwrap().unwrap();
        client.close(c); // gave up waiting
        assert_eq!(
            carry(&mut client, &mut server),
            0,
            "no Fin: never connected"
        );
        carry(&mut server, &mut client); // the Accepted finds no one
        assert_eq!(carry(&mut client, &mut server), 1, "a reset");
        // Without it the server's end would wait for ever.
        assert_eq!(server.receive(accepted, 16, false), Err(-104));
    }
}
