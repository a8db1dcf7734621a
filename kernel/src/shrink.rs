//! Shrinking and prefix bisection of failing inputs.
//!
//! Both work on the *materialized* form of an input: a zero seed and the
//! stream bytes the run consumed written out explicitly (see
//! [`dst::decision::materialize`]), so the result reads as explicit decisions
//! with a nominal tail. The shrinker then searches for a shortlex-smaller input
//! with the same failure signature, in passes as Hypothesis's shrinker does:
//! delete spans inside length-prefixed buffers (rewriting their length),
//! delete spans, zero spans, lower single bytes; until a pass changes nothing
//! or the run budget is spent.

use dst::decision::{SEED_BYTES, materialize, tail_seed};

use crate::{Executor, RunRecord, Signature};

/// Strips what cannot change the run: trailing zero bytes after a zero seed
/// (the nominal tail is zeros anyway), and an all-zero seed with nothing after.
pub fn normalize(mut input: Vec<u8>) -> Vec<u8> {
    if tail_seed(&input) == 0 {
        while input.len() > SEED_BYTES && input.last() == Some(&0) {
            input.pop();
        }
        if input.len() <= SEED_BYTES {
            input.clear();
        }
    }
    input
}

/// Shortlex order: shorter first, then bytewise.
pub fn shortlex_less(a: &[u8], b: &[u8]) -> bool {
    (a.len(), a) < (b.len(), b)
}

/// A shrunk input and what it took.
#[derive(Debug, Clone)]
pub struct Shrunk {
    pub input: Vec<u8>,
    pub record: RunRecord,
    /// Runs spent.
    pub runs: u64,
}

struct Search<'a, R: Executor + ?Sized> {
    runner: &'a mut R,
    signature: &'a Signature,
    budget: u64,
    runs: u64,
    best: Vec<u8>,
    record: RunRecord,
}

impl<R: Executor + ?Sized> Search<'_, R> {
    /// Runs `candidate`; adopts it if it keeps the signature and is smaller.
    fn try_adopt(&mut self, candidate: Vec<u8>) -> bool {
        let candidate = normalize(candidate);
        if self.runs >= self.budget || !shortlex_less(&candidate, &self.best) {
            return false;
        }
        self.runs += 1;
        let record = self.runner.run(&candidate);
        if record.signature().as_ref() == Some(self.signature) {
            debug_assert!(
                shortlex_less(&candidate, &self.best),
                "the best only shrinks"
            );
            self.best = candidate;
            self.record = record;
            true
        } else {
            false
        }
    }

    fn explicit_len(&self) -> usize {
        self.best.len().saturating_sub(SEED_BYTES)
    }

    fn span_sizes(&self) -> Vec<usize> {
        let mut sizes = Vec::new();
        let mut k = self.explicit_len().next_power_of_two();
        while k >= 1 {
            sizes.push(k);
            k /= 2;
        }
        sizes
    }

    /// Deletes spans of each size, scanning from the end.
    fn delete_spans(&mut self) -> bool {
        let mut progress = false;
        for k in self.span_sizes() {
            let mut end = self.explicit_len();
            while end > 0 {
                let start = end.saturating_sub(k);
                let mut candidate = self.best.clone();
                candidate.drain(SEED_BYTES + start..(SEED_BYTES + end).min(self.best.len()));
                progress |= self.try_adopt(candidate);
                end = start.min(self.explicit_len());
            }
        }
        progress
    }

    /// Deletes spans inside each length-prefixed buffer (a `length`
    /// decision and the fill after it: a libFuzzer harness's input),
    /// rewriting the length, so the decisions after the buffer keep their
    /// bytes (deleting the bytes alone would shift them into the buffer).
    fn shrink_buffers(&mut self) -> bool {
        let mut progress = false;
        let mut nth = 0;
        while let Some((offset, mut len)) = buffers(&self.record).get(nth).copied() {
            let at = SEED_BYTES + offset;
            let mut k = len.next_power_of_two();
            while k >= 1 && len > 0 {
                let mut end = len;
                while end > 0 {
                    let start = end.saturating_sub(k);
                    let mut candidate = self.best.clone();
                    if candidate.len() < at + 4 + len {
                        candidate.resize(at + 4 + len, 0);
                    }
                    candidate.drain(at + 4 + start..at + 4 + end);
                    let new_len = (len - (end - start)) as u32;
                    candidate[at..at + 4].copy_from_slice(&new_len.to_be_bytes());
                    if self.try_adopt(candidate) {
                        progress = true;
                        len = new_len as usize;
                    }
                    end = start.min(len);
                }
                k /= 2;
            }
            nth += 1;
        }
        progress
    }

    /// Zeroes spans of each size.
    fn zero_spans(&mut self) -> bool {
        let mut progress = false;
        for k in self.span_sizes() {
            let mut i = 0;
            while SEED_BYTES + i < self.best.len() {
                let start = SEED_BYTES + i;
                let end = (start + k).min(self.best.len());
                if self.best[start..end].iter().any(|&b| b != 0) {
                    let mut candidate = self.best.clone();
                    candidate[start..end].fill(0);
                    progress |= self.try_adopt(candidate);
                }
                i += k;
            }
        }
        progress
    }

    /// Lowers each nonzero byte: first the smallest values in order (which
    /// finds the least value of a modulo-encoded choice), then clearing its
    /// bits from the highest, then a binary search.
    fn lower_bytes(&mut self) -> bool {
        let mut progress = false;
        let mut at = SEED_BYTES;
        while at < self.best.len() {
            let lower = |search: &mut Self, value: u8| {
                let mut candidate = search.best.clone();
                candidate[at] = value;
                search.try_adopt(candidate)
            };
            let original = self.best[at];
            for value in 0..original.min(SMALL_VALUES) {
                if lower(self, value) {
                    break;
                }
            }
            for bit in (0..8).rev() {
                match self.best.get(at) {
                    Some(&b) if b & (1 << bit) != 0 => {
                        lower(self, b & !(1 << bit));
                    }
                    _ => {}
                }
            }
            if let Some(&b) = self.best.get(at) {
                let (mut lo, mut hi) = (0u8, b);
                while lo < hi && at < self.best.len() {
                    let mid = lo + (hi - lo) / 2;
                    if lower(self, mid) {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
            }
            progress |= self.best.get(at) != Some(&original);
            at += 1;
        }
        progress
    }
}

/// The (stream offset, length) of each length-prefixed buffer of a run: a
/// 4-byte `length` decision, and the fill right after it (none when empty).
fn buffers(record: &RunRecord) -> Vec<(usize, usize)> {
    use dst::decision::Kind;
    let decisions = &record.decisions;
    decisions
        .iter()
        .enumerate()
        .filter(|(_, d)| d.kind == Kind::Length as u8 && d.width == 4)
        .map(|(i, d)| {
            let len = decisions
                .get(i + 1)
                .filter(|n| n.offset == d.offset + 4 && n.kind == Kind::Fill as u8)
                .map_or(0, |n| n.width as usize);
            (d.offset as usize, len)
        })
        .collect()
}

/// Values tried one by one before bisecting a byte.
const SMALL_VALUES: u8 = 32;

/// Shrinks `input`, which must fail with `signature`, within `budget` runs.
/// Returns `None` if `input` does not reproduce the signature.
pub fn shrink(
    runner: &mut (impl Executor + ?Sized),
    input: &[u8],
    signature: &Signature,
    budget: u64,
) -> Option<Shrunk> {
    let record = runner.run(input);
    if record.signature().as_ref() != Some(signature) {
        return None;
    }
    let mut runs = 1;
    let mut best = input.to_vec();
    let mut best_record = record;
    // Make the tail explicit, so the result reads as decisions.
    if tail_seed(input) != 0 {
        let explicit = normalize(materialize(input, best_record.consumed));
        runs += 1;
        let again = runner.run(&explicit);
        if again.signature().as_ref() == Some(signature) {
            best = explicit;
            best_record = again;
        }
    }
    let mut search = Search {
        runner,
        signature,
        budget,
        runs,
        best: normalize(best.clone()),
        record: best_record.clone(),
    };
    if search.best != best {
        // Normalizing never changes the run, but check rather than assume.
        search.runs += 1;
        let again = search.runner.run(&search.best);
        if again.signature().as_ref() == Some(signature) {
            search.record = again;
        } else {
            search.best = best;
        }
    }
    loop {
        let before = search.runs;
        let progress = search.shrink_buffers()
            | search.delete_spans()
            | search.zero_spans()
            | search.lower_bytes();
        if !progress || search.runs >= search.budget || search.runs == before {
            break;
        }
    }
    debug_assert_eq!(search.record.signature().as_ref(), Some(signature));
    debug_assert!(
        search.runs <= budget.max(runs) + 1,
        "the budget bounds the runs"
    );
    Some(Shrunk {
        input: search.best,
        record: search.record,
        runs: search.runs,
    })
}

/// The shortest prefix of `input`'s materialized stream that still fails with
/// `signature` when the rest of the run comes from the nominal (zero) tail.
/// Returns the prefix input (zero seed + prefix bytes) and the prefix length,
/// or `None` if the materialized input does not fail.
pub fn bisect_prefix(
    runner: &mut (impl Executor + ?Sized),
    input: &[u8],
    signature: &Signature,
) -> Option<(Vec<u8>, usize)> {
    let record = runner.run(input);
    let full = materialize(input, record.consumed);
    let prefix = |k: usize| normalize(full[..SEED_BYTES + k].to_vec());
    let mut fails = |k: usize| runner.run(&prefix(k)).signature().as_ref() == Some(signature);
    debug_assert!(
        full.len() >= SEED_BYTES,
        "a materialized input starts with its seed"
    );
    let mut hi = full.len() - SEED_BYTES;
    if !fails(hi) {
        return None;
    }
    let mut lo = 0;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fails(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some((prefix(hi), hi))
}
