//! The decision encoding: how input bytes become decisions.
//!
//! An input is `seed (8 bytes, little-endian u64) ++ explicit bytes`. A run
//! reads one *decision stream*: the explicit bytes, then the *tail*. If the
//! seed is 0 the tail is all zeros (the nominal run continues); otherwise it
//! is the byte stream of `ChaCha8Rng::seed_from_u64(seed)`, drawn in 64-byte
//! blocks with `fill_bytes`. An input shorter than 8 bytes is a zero-padded
//! seed with no explicit bytes, so every byte string is a valid input, and the
//! empty input and every all-zero input are the nominal run.
//!
//! Each decision consumes a fixed number of bytes, read big-endian so that a
//! smaller byte string is a smaller (more nominal) value:
//!
//! | decision | bytes | value | nominal |
//! |---|---|---|---|
//! | `random::u64`, `Rng::next_u64` | 8 | the bytes | 0 |
//! | `Rng::next_u32` | 4 | the bytes | 0 |
//! | `random::below(n)`, `choose` | bytes to hold `n-1` (none if `n <= 1`) | bytes mod `n` | 0 / first |
//! | `random::bool` | 1 | lowest bit | false |
//! | `fault!` | 1 | fires iff byte >= [`FAULT_THRESHOLD`] | does not fire |
//! | schedule (which thread or task runs next, at every level) | as `below(runnable)` | index into the nominal order | the nominal one: the current thread keeps running, or the task woken first |
//! | strategy (first contested scheduling point) | 1 | byte mod 4: 0 direct, 1 PCT, 2 POS, 3 site priorities | direct |
//! | priority (PCT, POS: a thread's; site priorities: a site's) | 2 | the bytes | 0 |
//! | steps (PCT and site priorities, after the strategy) | 1 | the contested steps the run expects, [`steps_of`] | 1 |
//! | change (where the next switch may happen: PCT's and site priorities' change points, after steps; a preemptive level's slice, after each schedule) | 2 | a change point's position as a fraction of the expected steps; a slice, [`slice_of`] | at the first contested step; no preemption |
//! | `random::fill`, `Rng::fill_bytes` | the buffer's length | the bytes | zeros |
//! | length of a harness's input (`libfuzzer::input`), then its bytes as a fill | 4 | bytes mod `max_len + 1` | 0 (empty) |
//!
//! A random tail fires each fault with probability 1/16 and makes every other
//! choice uniform (up to modulo bias).
//!
//! **Scheduling is one encoding at every level.** Where more than one thread
//! (or task) can run, which runs next is a *schedule* decision: an index
//! into the level's nominal order, 0 being what would run were nothing
//! decided. Controlled threads (`dst::sched`'s direct strategy, and libdst's
//! pthreads), the emulator's guest threads and `dst::sim`'s tasks take it
//! alike. Where the next switch may happen is a *change* decision: a level
//! that can preempt (the emulator, after every instruction) follows each
//! schedule decision with a slice, the count of its switch points the
//! chosen thread runs before it is preempted ([`slice_of`]: 0 never, else
//! a log scale from 1 to millions); PCT's change points are the same kind,
//! placed among the run's contested steps. A level that adds a nominal time
//! quantum or switch points at shared-memory accesses counts its slice in
//! them, and the encoding stays. Strategies (PCT, POS, site priorities)
//! derive schedule choices from priorities instead of reading them, after
//! a first *strategy* byte.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

pub use dst_core::decision::{FAULT_THRESHOLD, Kind, SEED_BYTES, Value, be_value, below_width};
const TAIL_BLOCK: usize = 64;

/// The contested-step count a [`Kind::Steps`] byte stands for: bytes below
/// 128 count exactly (1 to 128: most runs are short, so a random byte
/// usually fits one), the others have a 4-bit mantissa and a 3-bit
/// exponent, 128 to 31,744, within 1/16 of any count.
pub fn steps_of(code: u8) -> u64 {
    if code < 128 {
        return u64::from(code) + 1;
    }
    let (mantissa, exponent) = (u64::from(code & 15), u32::from((code - 128) >> 4));
    (16 + mantissa) << (exponent + 3)
}

/// The smallest [`Kind::Steps`] byte whose count is at least `steps`.
pub fn steps_code(steps: u64) -> u8 {
    (0..=255u8).find(|&c| steps_of(c) >= steps).unwrap_or(255)
}

/// The tail seed of an input (its first 8 bytes, zero-padded).
pub fn tail_seed(input: &[u8]) -> u64 {
    let mut seed = [0u8; SEED_BYTES];
    let n = input.len().min(SEED_BYTES);
    seed[..n].copy_from_slice(&input[..n]);
    u64::from_le_bytes(seed)
}

/// The explicit decision bytes of an input (everything after the seed).
pub fn explicit(input: &[u8]) -> &[u8] {
    input.get(SEED_BYTES..).unwrap_or(&[])
}

/// The slice of a change decision's value `v` (two bytes) at a level that
/// preempts: `None` (0) never, else `(256 + low byte) << (high byte % 24)
/// >> 8` switch points (instructions, at the emulator).
pub fn slice_of(v: u64) -> Option<u64> {
    debug_assert!(v <= 0xFFFF, "a slice is two bytes");
    if v == 0 {
        return None;
    }
    let (exponent, mantissa) = (v >> 8, v & 0xFF);
    Some(((256 + mantissa) << (exponent % 24)) >> 8)
}

/// A reader over one run's decision stream.
///
/// Reads must be sequential: `read` continues where the last one stopped.
#[derive(Clone)]
pub struct Stream {
    seed: u64,
    tail: Option<ChaCha8Rng>,
    block: [u8; TAIL_BLOCK],
    block_pos: usize,
    /// Tail blocks produced so far.
    blocks: u64,
    /// Bytes consumed so far (explicit and tail).
    pub cursor: u64,
}

impl Stream {
    /// A stream for an input whose tail seed is `seed`.
    pub fn new(seed: u64) -> Stream {
        Stream {
            seed,
            tail: None,
            block: [0; TAIL_BLOCK],
            block_pos: TAIL_BLOCK,
            blocks: 0,
            cursor: 0,
        }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Fills `out` with the next bytes of the stream of `input` (the same
    /// input on every call of one run).
    pub fn read(&mut self, input: &[u8], out: &mut [u8]) {
        let explicit = explicit(input);
        let at = (self.cursor as usize).min(explicit.len());
        let from_input = (explicit.len() - at).min(out.len());
        out[..from_input].copy_from_slice(&explicit[at..at + from_input]);
        self.tail(&mut out[from_input..]);
        self.cursor += out.len() as u64;
    }

    /// Fills `out` with the tail's next bytes (zeros for a zero seed), a
    /// block's worth at a time.
    fn tail(&mut self, mut out: &mut [u8]) {
        if self.seed == 0 {
            out.fill(0);
            return;
        }
        while !out.is_empty() {
            if self.block_pos == TAIL_BLOCK {
                self.next_block();
            }
            let n = (TAIL_BLOCK - self.block_pos).min(out.len());
            let (now, later) = out.split_at_mut(n);
            now.copy_from_slice(&self.block[self.block_pos..self.block_pos + n]);
            self.block_pos += n;
            out = later;
        }
    }
}

thread_local! {
    /// The first tail block of the last seed: runs of one explorer
    /// mutating one corpus entry mostly share its seed, and seeding the
    /// generator costs more than a run's other decisions together.
    static FIRST_BLOCK: std::cell::Cell<(u64, [u8; TAIL_BLOCK])> =
        const { std::cell::Cell::new((0, [0; TAIL_BLOCK])) };
}

impl Stream {
    /// Fills `block` with the next tail block: the first from the cache
    /// when it holds this seed's, later ones from the generator (moved
    /// past the cached block).
    fn next_block(&mut self) {
        let seed = self.seed;
        debug_assert_ne!(seed, 0, "a zero seed has no tail");
        let first = self.blocks == 0;
        if first {
            let (cached, block) = FIRST_BLOCK.get();
            if cached == seed {
                self.block = block;
                self.block_pos = 0;
                self.blocks = 1;
                return;
            }
        }
        let blocks = self.blocks;
        let rng = self.tail.get_or_insert_with(|| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            // Past the blocks already served from the cache (u32 words).
            rng.set_word_pos(u128::from(blocks) * (TAIL_BLOCK as u128 / 4));
            rng
        });
        rng.fill_bytes(&mut self.block);
        self.block_pos = 0;
        self.blocks += 1;
        if first {
            FIRST_BLOCK.set((seed, self.block));
        }
    }
}

/// The first `n` tail bytes for `seed`.
pub fn tail_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut out = vec![0; n];
    Stream::new(seed).read(&[], &mut out);
    out
}

/// An input equivalent to `input` for a run that consumed `consumed` stream
/// bytes: zero seed, and the consumed bytes written out explicitly.
pub fn materialize(input: &[u8], consumed: u64) -> Vec<u8> {
    let mut out = vec![0u8; SEED_BYTES + consumed as usize];
    Stream::new(tail_seed(input)).read(input, &mut out[SEED_BYTES..]);
    out
}

#[cfg(test)]
mod tests {
    use super::slice_of;

    #[test]
    fn a_slice_is_never_at_zero_and_grows_on_a_log_scale() {
        assert_eq!(slice_of(0), None, "the nominal run is never preempted");
        assert_eq!(slice_of(1), Some(1));
        assert_eq!(slice_of(0x00FF), Some(1));
        assert_eq!(slice_of(0x0100), Some(2));
        assert_eq!(slice_of(0x0A00), Some(1 << 10));
        assert_eq!(slice_of(0xFFFF), Some(511 << 15 >> 8));
        let slices: Vec<u64> = (0..24u64).map(|e| slice_of(e << 8 | 1).unwrap()).collect();
        assert!(slices.windows(2).all(|w| w[0] <= w[1]), "{slices:?}");
    }
}
