//! The search for a linearization of one partition: Wing and Gong's
//! backtracking with Lowe's just-in-time pruning, the algorithm of
//! Porcupine's `checkSingle`.
//!
//! The history is a doubly-linked list of call and return events in time
//! order. The search walks it from the front: at a call it tries to
//! linearize that operation next (step the model; on success *lift* the
//! call and its return out of the list and start again from the front); at a
//! return it has met an operation that had to be linearized already, so it
//! backtracks (*unlift* the last linearized operation and try the event after
//! its call). A cache of `(linearized set, state)` configurations prunes
//! every configuration reached before: from equal configurations the rest of
//! the search is the same.
//!
//! Everything is index-based and flat: the list is an array of nodes linked
//! by `u32` indices; each state the model reaches is stored once and named
//! by a `u32` id; a step from a state is memoized per operation; the
//! linearized set is a fixed-width bitset (its width a type parameter, so
//! comparing and copying it is a few instructions) with an incremental
//! Zobrist hash; and the configurations live in an open-addressing table
//! fronted by a small table of recent ones, since most lookups find a
//! configuration reached a moment ago by another order of the same few
//! operations.
//!
//! Operations with an unknown outcome are *optional*: they may take effect
//! or not, so the search succeeds once every other operation is linearized;
//! one whose step changes nothing is skipped (leaving it available is never
//! worse), and identical ones are linearized in one order only.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

use crate::history::Operation;
use crate::model::Model;

const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// One operation as the search sees it: `ret == u64::MAX` and no output for
/// an unknown outcome.
pub(crate) struct Op<'a, I, O> {
    pub input: &'a I,
    pub output: Option<&'a O>,
    pub call: u64,
    pub ret: u64,
}

impl<I, O> Clone for Op<'_, I, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<I, O> Copy for Op<'_, I, O> {}

impl<'a, I, O> Op<'a, I, O> {
    /// The weakest form of the operation: invoked at the start, returning at
    /// the end, with any output. Any history with it replaced by this form
    /// has every linearization the original had.
    pub fn relaxed(self) -> Self {
        Self {
            input: self.input,
            output: None,
            call: 0,
            ret: u64::MAX,
        }
    }
}

/// What a search found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    Linearizable,
    Violation,
    /// The budget ran out first.
    Exhausted,
}

/// A step budget shared by several searches, with an optional deadline.
#[derive(Clone, Debug)]
pub(crate) struct Meter {
    steps: u64,
    limit: u64,
    deadline: Option<Instant>,
}

impl Meter {
    pub fn new(max_steps: Option<u64>, timeout: Option<Duration>) -> Self {
        Self {
            steps: 0,
            limit: max_steps.unwrap_or(u64::MAX),
            deadline: timeout.map(|t| Instant::now() + t),
        }
    }

    /// A budget of at most `max_steps` out of what is left of this one; give
    /// its steps back with [`Meter::absorb`].
    pub fn child(&self, max_steps: u64) -> Self {
        Self {
            steps: 0,
            limit: max_steps.min(self.limit.saturating_sub(self.steps)),
            deadline: self.deadline,
        }
    }

    pub fn absorb(&mut self, child: &Meter) {
        self.steps = self.steps.saturating_add(child.steps);
    }

    pub fn exhausted(&self) -> bool {
        self.steps >= self.limit || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Up to `want` steps to take now (0 once the budget is spent), to be
    /// counted with [`Meter::spend`]: a search counts in a local variable
    /// and checks the deadline between grants.
    #[inline]
    fn grant(&mut self, want: u64) -> u64 {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.limit = self.steps;
        }
        want.min(self.limit - self.steps)
    }

    #[inline]
    fn spend(&mut self, steps: u64) {
        self.steps += steps;
    }
}

/// One event of the list: node 0 is the head, node `k + 1` the `k`th event
/// in time order.
#[derive(Clone, Copy)]
struct Node {
    next: u32,
    prev: u32,
    /// The operation (index into the partition's operations).
    op: u32,
    /// For a call, its return node; `NIL` for a return.
    matching: u32,
}

fn event_list<I, O>(ops: &[Op<'_, I, O>]) -> Vec<Node> {
    let mut events: Vec<(u64, bool, u32)> = Vec::with_capacity(2 * ops.len());
    for (i, op) in ops.iter().enumerate() {
        debug_assert!(op.call <= op.ret);
        events.push((op.call, false, i as u32));
        events.push((op.ret, true, i as u32));
    }
    // Calls sort before returns at equal times: intervals are closed.
    events.sort_unstable();
    let count = events.len() as u32 + 1;
    let mut nodes: Vec<Node> = (0..count)
        .map(|k| Node {
            next: if k + 1 < count { k + 1 } else { NIL },
            prev: k.wrapping_sub(1),
            op: 0,
            matching: NIL,
        })
        .collect();
    let mut return_node = vec![NIL; ops.len()];
    for (k, &(_, is_return, op)) in events.iter().enumerate().rev() {
        let node = &mut nodes[k + 1];
        node.op = op;
        if is_return {
            return_node[op as usize] = k as u32 + 1;
        } else {
            node.matching = return_node[op as usize];
        }
    }
    nodes
}

/// Takes call node `e` and its return out of the list.
#[inline]
fn lift(nodes: &mut [Node], e: u32) {
    let Node { prev, next, .. } = nodes[e as usize];
    nodes[prev as usize].next = next;
    nodes[next as usize].prev = prev;
    let m = nodes[e as usize].matching;
    let Node { prev, next, .. } = nodes[m as usize];
    nodes[prev as usize].next = next;
    if next != NIL {
        nodes[next as usize].prev = prev;
    }
}

/// Puts back what [`lift`] took out, in reverse order.
#[inline]
fn unlift(nodes: &mut [Node], e: u32) {
    let m = nodes[e as usize].matching;
    let Node { prev, next, .. } = nodes[m as usize];
    nodes[prev as usize].next = m;
    if next != NIL {
        nodes[next as usize].prev = m;
    }
    let Node { prev, next, .. } = nodes[e as usize];
    nodes[prev as usize].next = e;
    nodes[next as usize].prev = e;
}

/// A set of operations: `[u64; W]` for partitions of up to `64 * W`
/// operations, `Vec<u64>` beyond. Both are words of bits; only how they
/// are made differs.
pub(crate) trait BitSet: Clone + Eq + AsRef<[u64]> + AsMut<[u64]> {
    fn empty(words: usize) -> Self;

    #[inline]
    fn insert(&mut self, i: usize) {
        self.as_mut()[i / 64] |= 1 << (i % 64);
    }

    #[inline]
    fn remove(&mut self, i: usize) {
        self.as_mut()[i / 64] &= !(1 << (i % 64));
    }

    #[inline]
    fn contains(&self, i: usize) -> bool {
        self.as_ref()[i / 64] & (1 << (i % 64)) != 0
    }
}

impl<const W: usize> BitSet for [u64; W] {
    fn empty(words: usize) -> Self {
        debug_assert!(words <= W);
        [0; W]
    }
}

impl BitSet for Vec<u64> {
    fn empty(words: usize) -> Self {
        vec![0; words]
    }
}

/// An open-addressing table of `u32` ids: each slot holds a 32-bit tag of
/// the key's hash and the id plus one (0 is empty), so probing touches one
/// cache line; the caller compares the keys themselves.
struct Table {
    slots: Vec<u64>,
    /// The hash of each id, to grow without rehashing keys.
    hashes: Vec<u64>,
}

impl Table {
    fn new() -> Self {
        Self {
            slots: vec![0; 64],
            hashes: Vec::new(),
        }
    }

    /// The id of the key with `hash` that `is_key` accepts (`Ok`), or a new
    /// id (`Err`), whose key the caller must then store.
    #[inline(always)]
    fn find_or_add(&mut self, hash: u64, mut is_key: impl FnMut(u32) -> bool) -> Result<u32, u32> {
        if 2 * (self.hashes.len() + 1) > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let tag = hash >> 32;
        let mut i = hash as usize & mask;
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                let id = self.hashes.len();
                assert!(id < u32::MAX as usize, "the linearizability cache is full");
                self.slots[i] = tag << 32 | (id as u64 + 1);
                self.hashes.push(hash);
                return Err(id as u32);
            }
            if slot >> 32 == tag {
                let id = (slot & 0xffff_ffff) as u32 - 1;
                if is_key(id) {
                    return Ok(id);
                }
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        self.slots = vec![0; self.slots.len() * 2];
        let mask = self.slots.len() - 1;
        for (id, &hash) in self.hashes.iter().enumerate() {
            let mut i = hash as usize & mask;
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = (hash >> 32) << 32 | (id as u64 + 1);
        }
    }
}

/// The model states reached, each stored once and named by its id.
struct States<S> {
    table: Table,
    states: Vec<S>,
    /// A random key per id, for configuration hashes.
    keys: Vec<u64>,
}

impl<S: Eq + Hash> States<S> {
    fn new() -> Self {
        Self {
            table: Table::new(),
            states: Vec::new(),
            keys: Vec::new(),
        }
    }

    fn intern(&mut self, state: S) -> u32 {
        let states = &self.states;
        match self
            .table
            .find_or_add(crate::hash_of(&state), |id| states[id as usize] == state)
        {
            Ok(id) => id,
            Err(id) => {
                self.states.push(state);
                self.keys.push(splitmix64(u64::from(id) ^ 0x5eed));
                id
            }
        }
    }
}

struct Configuration<B> {
    bits: B,
    state: u32,
}

/// The configurations reached (Lowe's cache), with a small direct-mapped
/// table of recent ones in front (about 32 KiB, so it stays in the CPU's
/// cache), which answers most lookups.
struct Configurations<B> {
    table: Table,
    all: Vec<Configuration<B>>,
    recent: Vec<(u64, u32, B)>,
}

impl<B: BitSet> Configurations<B> {
    fn new(words: usize) -> Self {
        let size = (32 * 1024 / (16 + 8 * words)).next_power_of_two() / 2;
        Self {
            table: Table::new(),
            all: Vec::new(),
            recent: vec![(0, 0, B::empty(words)); size.max(1)],
        }
    }

    /// Adds the configuration; false if it was there already.
    #[inline(always)]
    fn insert(&mut self, hash: u64, bits: &B, state: u32) -> bool {
        let r = (hash >> 40) as usize & (self.recent.len() - 1);
        let recent = &mut self.recent[r];
        // A zeroed entry equals only the initial configuration (no
        // operation linearized, state 0), which is in the table.
        if recent.0 == hash && recent.1 == state && recent.2 == *bits {
            return false;
        }
        recent.0 = hash;
        recent.1 = state;
        recent.2.clone_from(bits);
        let all = &self.all;
        let found = self.table.find_or_add(hash, |id| {
            let c = &all[id as usize];
            c.state == state && c.bits == *bits
        });
        if found.is_err() {
            self.all.push(Configuration {
                bits: bits.clone(),
                state,
            });
        }
        found.is_err()
    }
}

/// How many states the memo keeps per operation (direct-mapped by the
/// state id's low bits).
const MEMO_WAYS: usize = 8;

/// The search of one partition, resumable: [`Search::run`] returns
/// [`Found::Exhausted`] when its meter runs out and goes on from there when
/// called again.
pub(crate) struct Search<'m, 'o, M: Model, B> {
    model: &'m M,
    ops: &'o [Op<'o, M::Input, M::Output>],
    nodes: Vec<Node>,
    zobrist: Vec<u64>,
    /// The linearized operations, and the XOR of their Zobrist keys.
    bits: B,
    linearized_hash: u64,
    states: States<M::State>,
    configurations: Configurations<B>,
    /// Per operation and state (low bits): `(state + 1, next state or NIL)`.
    memo: Vec<(u32, u32)>,
    /// The linearized calls, each with the state id before it.
    calls: Vec<(u32, u32)>,
    state: u32,
    /// The event being looked at.
    at: u32,
    /// Steps taken over all runs.
    steps: u64,
    /// Per operation: its outcome is unknown, so it may also never take
    /// effect (it need not be linearized).
    optional: Vec<bool>,
    /// Per optional operation: the previous one identical to it (same
    /// input and invocation time), which must be linearized first, or
    /// `NIL`. Identical operations are interchangeable, so this loses no
    /// linearization and saves trying them in every order.
    twin: Vec<u32>,
    /// Operations not optional and not yet linearized.
    required_left: usize,
}

impl<'m, 'o, M: Model, B: BitSet> Search<'m, 'o, M, B> {
    fn new(model: &'m M, ops: &'o [Op<'o, M::Input, M::Output>]) -> Self {
        let nodes = event_list(ops);
        let optional: Vec<bool> = ops
            .iter()
            .map(|op| op.output.is_none() && op.ret == u64::MAX)
            .collect();
        let words = ops.len().div_ceil(64).max(1);
        let mut states = States::new();
        let state = states.intern(model.init());
        let bits = B::empty(words);
        let mut configurations = Configurations::new(words);
        configurations.insert(states.keys[state as usize], &bits, state);
        Self {
            model,
            ops,
            at: nodes[HEAD as usize].next,
            nodes,
            zobrist: (0..ops.len() as u64).map(splitmix64).collect(),
            bits,
            linearized_hash: 0,
            states,
            configurations,
            memo: vec![(0, 0); ops.len() * MEMO_WAYS],
            calls: Vec::with_capacity(ops.len()),
            state,
            steps: 0,
            optional: optional.clone(),
            twin: twins(ops, &optional),
            required_left: optional.iter().filter(|o| !**o).count(),
        }
    }

    /// The state id after operation `i` from the current state, or `NIL`.
    #[inline]
    fn step(&mut self, i: u32) -> u32 {
        let slot = i as usize * MEMO_WAYS + (self.state as usize & (MEMO_WAYS - 1));
        let (key, next) = self.memo[slot];
        if key == self.state.wrapping_add(1) {
            return next;
        }
        let op = &self.ops[i as usize];
        let from = &self.states.states[self.state as usize];
        let next = match self.model.step(from, op.input, op.output) {
            Some(state) => self.states.intern(state),
            None => NIL,
        };
        self.memo[slot] = (self.state.wrapping_add(1), next);
        next
    }

    fn run(&mut self, meter: &mut Meter) -> Found {
        let mut e = self.at;
        let mut found = if self.required_left == 0 {
            Found::Linearizable
        } else {
            Found::Exhausted
        };
        // Steps are granted in batches of 4096, so the deadline is read
        // once per batch.
        while found == Found::Exhausted {
            let granted = meter.grant(4096);
            if granted == 0 {
                break;
            }
            let mut left = granted;
            while left > 0 {
                left -= 1;
                let node = self.nodes[e as usize];
                let i = node.op as usize;
                if node.matching != NIL {
                    let twin = self.twin[i];
                    let next = if twin != NIL && !self.bits.contains(twin as usize) {
                        NIL
                    } else {
                        self.step(node.op)
                    };
                    // An optional operation that changes nothing is better
                    // left out: leaving it available is never worse.
                    if next != NIL && !(self.optional[i] && next == self.state) {
                        self.bits.insert(i);
                        let hash = self.linearized_hash
                            ^ self.zobrist[i]
                            ^ self.states.keys[next as usize];
                        if self.configurations.insert(hash, &self.bits, next) {
                            self.linearized_hash ^= self.zobrist[i];
                            self.calls.push((e, self.state));
                            self.state = next;
                            lift(&mut self.nodes, e);
                            if !self.optional[i] {
                                self.required_left -= 1;
                                if self.required_left == 0 {
                                    found = Found::Linearizable;
                                    break;
                                }
                            }
                            e = self.nodes[HEAD as usize].next;
                            continue;
                        }
                        self.bits.remove(i);
                    }
                    e = node.next;
                } else if self.optional[i] {
                    // Its return is at the end of time: nothing forces it.
                    e = node.next;
                } else {
                    let Some((call, before)) = self.calls.pop() else {
                        found = Found::Violation;
                        break;
                    };
                    let i = self.nodes[call as usize].op as usize;
                    self.bits.remove(i);
                    self.linearized_hash ^= self.zobrist[i];
                    self.state = before;
                    if !self.optional[i] {
                        self.required_left += 1;
                    }
                    unlift(&mut self.nodes, call);
                    e = self.nodes[call as usize].next;
                }
            }
            meter.spend(granted - left);
            self.steps += granted - left;
        }
        self.at = e;
        found
    }
}

/// For each optional operation, the previous optional one with the same
/// input and invocation time (`NIL` if none).
fn twins<I: PartialEq, O>(ops: &[Op<'_, I, O>], optional: &[bool]) -> Vec<u32> {
    let mut twin = vec![NIL; ops.len()];
    let mut classes: Vec<usize> = Vec::new(); // the last member of each class
    for (i, op) in ops.iter().enumerate() {
        if !optional[i] {
            continue;
        }
        match classes
            .iter_mut()
            .find(|last| ops[**last].call == op.call && ops[**last].input == op.input)
        {
            Some(last) => {
                twin[i] = *last as u32;
                *last = i;
            }
            None => classes.push(i),
        }
    }
    twin
}

/// A [`Search`] with the narrowest bitset for its partition.
pub(crate) enum AnySearch<'m, 'o, M: Model> {
    W1(Search<'m, 'o, M, [u64; 1]>),
    W2(Search<'m, 'o, M, [u64; 2]>),
    W4(Search<'m, 'o, M, [u64; 4]>),
    W8(Search<'m, 'o, M, [u64; 8]>),
    W16(Search<'m, 'o, M, [u64; 16]>),
    Wide(Search<'m, 'o, M, Vec<u64>>),
}

macro_rules! each_search {
    ($any:expr, $s:ident => $body:expr) => {
        match $any {
            AnySearch::W1($s) => $body,
            AnySearch::W2($s) => $body,
            AnySearch::W4($s) => $body,
            AnySearch::W8($s) => $body,
            AnySearch::W16($s) => $body,
            AnySearch::Wide($s) => $body,
        }
    };
}

impl<'m, 'o, M: Model> AnySearch<'m, 'o, M> {
    pub fn new(model: &'m M, ops: &'o [Op<'o, M::Input, M::Output>]) -> Self {
        assert!(
            ops.len() < (u32::MAX / 4) as usize,
            "a partition of {} operations is too large",
            ops.len()
        );
        match ops.len().div_ceil(64) {
            0 | 1 => AnySearch::W1(Search::new(model, ops)),
            2 => AnySearch::W2(Search::new(model, ops)),
            3 | 4 => AnySearch::W4(Search::new(model, ops)),
            5..=8 => AnySearch::W8(Search::new(model, ops)),
            9..=16 => AnySearch::W16(Search::new(model, ops)),
            _ => AnySearch::Wide(Search::new(model, ops)),
        }
    }

    /// Goes on searching until a verdict or the end of `meter`; called
    /// again after [`Found::Exhausted`], it goes on from where it stopped.
    pub fn run(&mut self, meter: &mut Meter) -> Found {
        each_search!(self, s => s.run(meter))
    }

    /// Steps taken over all runs.
    pub fn steps(&self) -> u64 {
        each_search!(self, s => s.steps)
    }
}

/// Searches for a linearization of `ops` (one partition) from `model.init()`.
pub(crate) fn search<M: Model>(
    model: &M,
    ops: &[Op<'_, M::Input, M::Output>],
    meter: &mut Meter,
) -> Found {
    AnySearch::new(model, ops).run(meter)
}
/// A bound on the work of a check: search steps (deterministic) and wall
/// time (not). Either, both or neither.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    /// Steps of the search (one per event visited), over all partitions.
    pub max_steps: Option<u64>,
    pub timeout: Option<Duration>,
}

impl Budget {
    pub const UNLIMITED: Budget = Budget {
        max_steps: None,
        timeout: None,
    };

    pub fn steps(max_steps: u64) -> Self {
        Self {
            max_steps: Some(max_steps),
            timeout: None,
        }
    }

    pub fn timeout(timeout: Duration) -> Self {
        Self {
            max_steps: None,
            timeout: Some(timeout),
        }
    }

    pub(crate) fn meter(&self) -> Meter {
        Meter::new(self.max_steps, self.timeout)
    }
}

/// One partition: its key and the indices of its operations in the history.
pub(crate) struct Partition {
    pub key: Option<String>,
    pub ops: Vec<usize>,
}

/// Splits `operations` by [`Model::partition`], in order of first appearance.
pub(crate) fn partitions<M: Model>(
    model: &M,
    operations: &[Operation<M::Input, M::Output>],
    partition: bool,
) -> Vec<Partition> {
    if !partition {
        return vec![Partition {
            key: None,
            ops: (0..operations.len()).collect(),
        }];
    }
    let mut index: HashMap<Option<String>, usize> = HashMap::new();
    let mut parts: Vec<Partition> = Vec::new();
    for (i, op) in operations.iter().enumerate() {
        let key = model.partition(&op.input);
        let p = *index.entry(key.clone()).or_insert_with(|| {
            parts.push(Partition {
                key,
                ops: Vec::new(),
            });
            parts.len() - 1
        });
        parts[p].ops.push(i);
    }
    parts
}

/// The search's view of the operations at `indices`.
pub(crate) fn view<'a, I, O>(
    operations: &'a [Operation<I, O>],
    indices: &[usize],
) -> Vec<Op<'a, I, O>> {
    indices
        .iter()
        .map(|&i| {
            let op = &operations[i];
            Op {
                input: &op.input,
                output: op.output(),
                call: op.call,
                ret: op.return_time().unwrap_or(u64::MAX),
            }
        })
        .collect()
}
