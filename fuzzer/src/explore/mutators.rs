//! Mutators that know decisions, beside LibAFL's havoc.
//!
//! Each reads the [`DecisionSpans`] of the input being mutated (recorded when
//! it entered the corpus) and edits whole decisions:
//! - [`ChangeDecision`]: give one decision another value (a fault fires or
//!   stops firing, a boolean flips, a choice changes);
//! - [`ZeroDecisions`]: make a run of consecutive decisions nominal (drop the
//!   faults in a window);
//! - [`SpliceDecisions`]: this input's decisions up to a boundary, then
//!   another corpus entry's decisions from one of its boundaries;
//! - [`FitSteps`] (around the others): a PCT run's expected length becomes
//!   the mutated entry's own count of contested steps, so its change points
//!   spread over the run as PCT assumes;
//! - [`CapBuffer`] (around byte havoc) with [`LengthControl`]: a harness's
//!   buffer grows only as the search needs it, as libFuzzer's
//!   `-len_control` has it ([`ChangeDecision`] and [`BufferHavoc`] keep
//!   within the same cap).
//!
//! A decision that came from the input's random tail is first written out
//! explicitly (the input is materialized up to it), so the edit sticks.

use std::borrow::Cow;
use std::cell::RefCell;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::rc::Rc;

use dst::decision::{self, Kind, SEED_BYTES, Value};
use libafl::corpus::HasCurrentCorpusId;
use libafl::corpus::{Corpus, CorpusId};
use libafl::inputs::BytesInput;
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::{HasCorpus, HasCurrentTestcase, HasExecutions, HasMaxSize, HasRand};
use libafl::{Error, HasMetadata};
use libafl_bolts::Named;
use libafl_bolts::rands::Rand;
use serde::{Deserialize, Serialize};

use crate::explore::feedback::DecisionSpans;

/// The current testcase's decision spans, and where its PCT expected
/// length is (`Kind::Steps`), looked up once per corpus entry: a stage
/// stacks dozens of mutations on one entry, and a metadata lookup and a
/// copy for each of them cost more than the run.
struct Current {
    id: Option<CorpusId>,
    spans: Rc<DecisionSpans>,
    /// The `Kind::Steps` decision's offset, if the entry took one.
    steps: Option<usize>,
}

thread_local! {
    static CURRENT: RefCell<Current> = RefCell::new(Current {
        id: None,
        spans: Rc::default(),
        steps: None,
    });
}

/// Forgets the cached entry: a new campaign in this process numbers its
/// corpus from 0 again.
pub fn new_campaign() {
    CURRENT.with_borrow_mut(|c| c.id = None);
}

/// The current testcase's spans (an entry's spans never change once it is
/// in the corpus, and a campaign does not reuse ids).
fn current<S>(state: &S) -> Option<(Rc<DecisionSpans>, Option<usize>)>
where
    S: HasCurrentTestcase<BytesInput> + HasCurrentCorpusId,
{
    let id = state.current_corpus_id().ok().flatten()?;
    CURRENT.with_borrow_mut(|c| {
        if c.id != Some(id) {
            let testcase = state.current_testcase().ok()?;
            let spans = testcase.metadata::<DecisionSpans>().ok()?.clone();
            c.steps = spans
                .spans
                .iter()
                .find(|&&(_, w, k)| k == Kind::Steps as u8 && w == 1)
                .map(|&(offset, _, _)| offset as usize);
            c.spans = Rc::new(spans);
            c.id = Some(id);
        }
        Some((c.spans.clone(), c.steps))
    })
}

/// Up to `window` consecutive decision spans of the current testcase,
/// starting at a random one.
fn pick_spans<S>(state: &mut S, window: usize) -> Option<(Rc<DecisionSpans>, Range<usize>)>
where
    S: HasCurrentTestcase<BytesInput> + HasCurrentCorpusId + HasRand,
{
    let (spans, _) = current(state)?;
    let n = spans.spans.len();
    if n == 0 {
        return None;
    }
    let start = pick(state.rand_mut(), n);
    Some((spans, start..(start + window).min(n)))
}

fn pick(rand: &mut impl Rand, n: usize) -> usize {
    NonZeroUsize::new(n).map_or(0, |n| rand.below(n))
}

/// Makes sure the input holds stream bytes `..end` explicitly.
pub(crate) fn ensure_explicit(bytes: &mut Vec<u8>, end: usize) {
    let have = bytes.len().saturating_sub(SEED_BYTES);
    if have >= end {
        return;
    }
    if decision::tail_seed(bytes) == 0 {
        bytes.resize(SEED_BYTES + end, 0);
    } else {
        *bytes = decision::materialize(bytes, end as u64);
    }
}

/// Changes one decision's value.
#[derive(Debug, Default)]
pub struct ChangeDecision;

impl Named for ChangeDecision {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("ChangeDecision");
        &NAME
    }
}

impl<S> Mutator<BytesInput, S> for ChangeDecision
where
    S: HasRand
        + HasCurrentTestcase<BytesInput>
        + HasCurrentCorpusId
        + HasCorpus<BytesInput>
        + HasExecutions
        + HasMetadata,
{
    fn mutate(&mut self, state: &mut S, input: &mut BytesInput) -> Result<MutationResult, Error> {
        let Some((spans, picked)) = pick_spans(state, 1) else {
            return Ok(MutationResult::Skipped);
        };
        let (offset, width, kind) = spans.spans[picked.start];
        let (offset, width) = (offset as usize, width as usize);
        if width == 0 {
            return Ok(MutationResult::Skipped);
        }
        let limit = if is_buffer_length(kind, width) {
            buffer_limit(state)
        } else {
            None
        };
        let rand = state.rand_mut();
        let bytes = input.as_mut();
        ensure_explicit(bytes, offset + width);
        let at = SEED_BYTES + offset;
        let slot = &mut bytes[at..at + width];
        match Kind::from_u8(kind) {
            Some(Kind::Fault) => {
                slot[0] = if slot[0] >= decision::FAULT_THRESHOLD {
                    0
                } else {
                    0xFF
                }
            }
            Some(Kind::Bool) => slot[0] ^= 1,
            // Any runnable thread may be the interesting one: uniform.
            Some(Kind::Schedule | Kind::Strategy | Kind::Priority | Kind::Change) => {
                for b in slot.iter_mut() {
                    *b = rand.next() as u8;
                }
            }
            // A buffer's new length, within the length control's cap: any
            // length up to it, or a short one.
            Some(Kind::Length) if limit.is_some() => {
                let limit = limit.unwrap_or_default();
                let n = if rand.coinflip(0.5) {
                    rand.below(NonZeroUsize::new(limit + 1).unwrap())
                } else {
                    rand.below(NonZeroUsize::new(8).unwrap()).min(limit)
                };
                slot.copy_from_slice(&(n as u32).to_be_bytes());
            }
            // A buffer (a harness's whole input): eight bytes a draw, not
            // one (a draw per byte was 8% of a libFuzzer harness's time).
            Some(Kind::Fill) => {
                for chunk in slot.chunks_mut(8) {
                    let word = rand.next().to_le_bytes();
                    chunk.copy_from_slice(&word[..chunk.len()]);
                }
                if rand.coinflip(0.5) {
                    slot.fill(0);
                    slot[width - 1] = rand.below(NonZeroUsize::new(8).unwrap()) as u8;
                }
            }
            _ => {
                for b in slot.iter_mut() {
                    *b = rand.next() as u8;
                }
                // Small values are the interesting ones for choices.
                if rand.coinflip(0.5) {
                    slot.fill(0);
                    slot[width - 1] = rand.below(NonZeroUsize::new(8).unwrap()) as u8;
                }
            }
        }
        Ok(MutationResult::Mutated)
    }

    fn post_exec(&mut self, _state: &mut S, _id: Option<CorpusId>) -> Result<(), Error> {
        Ok(())
    }
}

/// Zeroes a window of consecutive decisions.
#[derive(Debug, Default)]
pub struct ZeroDecisions;

impl Named for ZeroDecisions {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("ZeroDecisions");
        &NAME
    }
}

impl<S> Mutator<BytesInput, S> for ZeroDecisions
where
    S: HasRand + HasCurrentTestcase<BytesInput> + HasCurrentCorpusId,
{
    fn mutate(&mut self, state: &mut S, input: &mut BytesInput) -> Result<MutationResult, Error> {
        let Some((spans, picked)) = pick_spans(state, 16) else {
            return Ok(MutationResult::Skipped);
        };
        let spans = &spans.spans[picked];
        let count = 1 + pick(state.rand_mut(), spans.len());
        let (start, _, _) = spans[0];
        let (last_offset, last_width, _) = spans[count - 1];
        let end = last_offset as usize + last_width as usize;
        let bytes = input.as_mut();
        ensure_explicit(bytes, end);
        bytes[SEED_BYTES + start as usize..SEED_BYTES + end].fill(0);
        Ok(MutationResult::Mutated)
    }

    fn post_exec(&mut self, _state: &mut S, _id: Option<CorpusId>) -> Result<(), Error> {
        Ok(())
    }
}

/// Splices two inputs at decision boundaries.
#[derive(Debug, Default)]
pub struct SpliceDecisions;

impl Named for SpliceDecisions {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("SpliceDecisions");
        &NAME
    }
}

impl<S> Mutator<BytesInput, S> for SpliceDecisions
where
    S: HasRand + HasCurrentTestcase<BytesInput> + HasCorpus<BytesInput> + HasCurrentCorpusId,
{
    fn mutate(&mut self, state: &mut S, input: &mut BytesInput) -> Result<MutationResult, Error> {
        let Some((spans, picked)) = pick_spans(state, 1) else {
            return Ok(MutationResult::Skipped);
        };
        let count = state.corpus().count();
        if count < 2 {
            return Ok(MutationResult::Skipped);
        }
        let nth = pick(state.rand_mut(), count);
        let id = state.corpus().nth(nth);
        let (other_bytes, other_spans) = {
            let mut other = state.corpus().get(id)?.borrow_mut();
            let spans = other
                .metadata::<DecisionSpans>()
                .map(|s| s.spans.clone())
                .unwrap_or_default();
            let bytes = other.load_input(state.corpus())?.as_ref().clone();
            (bytes, spans)
        };
        if other_spans.is_empty() {
            return Ok(MutationResult::Skipped);
        }
        let rand = state.rand_mut();
        let (cut, _, _) = spans.spans[picked.start];
        let (from, _, _) = other_spans[pick(rand, other_spans.len())];
        let mut other_full = other_bytes;
        let other_end = other_spans
            .last()
            .map_or(0, |&(o, w, _)| o as usize + w as usize);
        ensure_explicit(&mut other_full, other_end);
        let bytes = input.as_mut();
        ensure_explicit(bytes, cut as usize);
        bytes.truncate(SEED_BYTES + cut as usize);
        bytes.extend_from_slice(&other_full[SEED_BYTES + from as usize..]);
        Ok(MutationResult::Mutated)
    }

    fn post_exec(&mut self, _state: &mut S, _id: Option<CorpusId>) -> Result<(), Error> {
        Ok(())
    }
}

/// Runs `inner`; when it mutated, writes the current testcase's count of
/// contested steps into its [`Kind::Steps`] decision (a PCT run's
/// expected length), if it took one.
pub struct FitSteps<M> {
    inner: M,
}

impl<M> FitSteps<M> {
    pub fn new(inner: M) -> FitSteps<M> {
        FitSteps { inner }
    }
}

impl<M> Named for FitSteps<M> {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("FitSteps");
        &NAME
    }
}

impl<M, S> Mutator<BytesInput, S> for FitSteps<M>
where
    M: Mutator<BytesInput, S>,
    S: HasCurrentTestcase<BytesInput> + HasCurrentCorpusId,
{
    fn mutate(&mut self, state: &mut S, input: &mut BytesInput) -> Result<MutationResult, Error> {
        let result = self.inner.mutate(state, input)?;
        if result == MutationResult::Skipped {
            return Ok(result);
        }
        let fit = current(state).and_then(|(spans, steps)| {
            Some((steps?, spans.contested)).filter(|&(_, contested)| contested > 0)
        });
        if let Some((offset, contested)) = fit {
            let bytes = input.as_mut();
            ensure_explicit(bytes, offset + 1);
            bytes[SEED_BYTES + offset] = decision::steps_code(contested);
        }
        Ok(result)
    }

    fn post_exec(&mut self, state: &mut S, id: Option<CorpusId>) -> Result<(), Error> {
        self.inner.post_exec(state, id)
    }
}

/// Byte-level havoc on an input's explicit decision bytes, keeping its
/// tail seed: a mutant then continues with its parent's random tail, whose
/// first block is cached (seeding the generator costs more than a whole
/// run of a small target). One mutation in [`RESEED`] draws a new seed
/// instead: a new random continuation of the same explicit prefix.
pub struct KeepSeed<M> {
    inner: M,
}

/// One havoc mutation in this many draws a new tail seed.
const RESEED: usize = 16;

impl<M> KeepSeed<M> {
    pub fn new(inner: M) -> KeepSeed<M> {
        KeepSeed { inner }
    }
}

impl<M> Named for KeepSeed<M> {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("KeepSeed");
        &NAME
    }
}

impl<M, S> Mutator<BytesInput, S> for KeepSeed<M>
where
    M: Mutator<BytesInput, S>,
    S: HasRand,
{
    fn mutate(&mut self, state: &mut S, input: &mut BytesInput) -> Result<MutationResult, Error> {
        let bytes = input.as_mut();
        bytes.resize(bytes.len().max(SEED_BYTES), 0);
        let mut seed = [0u8; SEED_BYTES];
        seed.copy_from_slice(&bytes[..SEED_BYTES]);
        bytes.drain(..SEED_BYTES);
        let result = self.inner.mutate(state, input);
        if pick(state.rand_mut(), RESEED) == 0 {
            seed = state.rand_mut().next().to_le_bytes();
        }
        let bytes = input.as_mut();
        bytes.splice(0..0, seed);
        if bytes.iter().all(|&b| b == 0) {
            bytes.clear(); // all zero is the nominal input: say it shortest
        }
        result
    }

    fn post_exec(&mut self, state: &mut S, id: Option<CorpusId>) -> Result<(), Error> {
        self.inner.post_exec(state, id)
    }
}

/// Whether the current testcase took a buffer length decision (a
/// libFuzzer harness's input), so [`BufferHavoc`] has work.
pub fn has_buffer<S: HasCurrentTestcase<BytesInput>>(state: &S) -> bool {
    state.current_testcase().is_ok_and(|t| {
        t.metadata::<DecisionSpans>().is_ok_and(|s| {
            s.spans
                .iter()
                .any(|&(_, w, k)| k == Kind::Length as u8 && w == 4)
        })
    })
}

/// Byte-level havoc (LibAFL's, with tokens) on the bytes of one buffer
/// decision: a [`Kind::Length`] decision and the fill after it, as a
/// libFuzzer harness's input is taken. The length is rewritten to the new
/// size, so insertions and deletions change the buffer, not what follows
/// it (the code under test's own decisions keep their bytes).
pub struct BufferHavoc<M> {
    inner: M,
}

impl<M> BufferHavoc<M> {
    pub fn new(inner: M) -> BufferHavoc<M> {
        BufferHavoc { inner }
    }
}

impl<M> Named for BufferHavoc<M> {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("BufferHavoc");
        &NAME
    }
}

impl<M, S> Mutator<BytesInput, S> for BufferHavoc<M>
where
    M: Mutator<BytesInput, S>,
    S: HasRand
        + HasCurrentTestcase<BytesInput>
        + HasCorpus<BytesInput>
        + HasExecutions
        + HasMetadata
        + HasMaxSize,
{
    fn mutate(&mut self, state: &mut S, input: &mut BytesInput) -> Result<MutationResult, Error> {
        let buffers: Vec<(usize, usize)> = {
            let testcase = state.current_testcase()?;
            let Ok(spans) = testcase.metadata::<DecisionSpans>() else {
                return Ok(MutationResult::Skipped);
            };
            let spans = &spans.spans;
            spans
                .iter()
                .enumerate()
                .filter(|(_, s)| is_buffer_length(s.2, s.1 as usize))
                .map(|(i, &(offset, _, _))| (offset as usize, fill_after(spans, i)))
                .collect()
        };
        if buffers.is_empty() {
            return Ok(MutationResult::Skipped);
        }
        let (offset, len) = buffers[pick(state.rand_mut(), buffers.len())];
        let bytes = input.as_mut();
        ensure_explicit(bytes, offset + 4 + len);
        let start = SEED_BYTES + offset + 4;
        let mut buffer = BytesInput::new(bytes[start..start + len].to_vec());
        // LibAFL's mutators grow an input up to the state's maximum size:
        // for this buffer, the length control's cap (a longer one, a
        // random tail's, is cut to it).
        let max_size = state.max_size();
        let limit = buffer_limit(state).map_or(max_size, |l| l.min(max_size));
        state.set_max_size(limit);
        let result = self.inner.mutate(state, &mut buffer);
        state.set_max_size(max_size);
        if result? == MutationResult::Skipped {
            return Ok(MutationResult::Skipped);
        }
        let data: &[u8] = buffer.as_ref();
        let data = &data[..data.len().min(limit)];
        let new_len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let data = &data[..new_len as usize];
        let bytes = input.as_mut();
        let rest = bytes.split_off(start + len);
        bytes.truncate(start - 4);
        bytes.extend_from_slice(&new_len.to_be_bytes());
        bytes.extend_from_slice(data);
        bytes.extend_from_slice(&rest);
        Ok(MutationResult::Mutated)
    }

    fn post_exec(&mut self, _state: &mut S, _id: Option<CorpusId>) -> Result<(), Error> {
        Ok(())
    }
}

/// Whether a decision of `kind` and `width` bytes is a buffer's length
/// (its fill follows it).
fn is_buffer_length(kind: u8, width: usize) -> bool {
    kind == Kind::Length as u8 && width == 4
}

/// The length of the buffer whose length decision is span `i`: the width
/// of the fill right after it (none for an empty buffer).
fn fill_after(spans: &[(u32, u16, u8)], i: usize) -> usize {
    let offset = spans[i].0;
    spans
        .get(i + 1)
        .filter(|n| n.0 == offset + 4 && Kind::from_u8(n.2) == Some(Kind::Fill))
        .map_or(0, |n| n.1 as usize)
}

/// libFuzzer's length control (`-len_control`), as state metadata: the
/// longest buffer a mutation may make (or input-to-state write into a
/// length). It starts at the longest buffer of the inputs the campaign
/// was given (at least 4 bytes) and grows by its own log2 each time
/// `per_log` times that log2 runs have passed without a new corpus entry,
/// up to `max_len`. A longer buffer is cut to it: only a random tail's
/// can be longer (the given inputs are within the first cap), and its
/// descendants kept at its length (random kilobytes) slowed libxml2's
/// campaigns as much as no cap at all. Short inputs are fast (a parser's
/// run costs about its length: libxml2's harness spent 15% of its time
/// splitting dst's kilobyte inputs, and ran at 3.1 times the rate with
/// them capped, docs/benchmarks.md), and a search finds from short inputs
/// what it can before it pays for long ones.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LengthControl {
    per_log: u64,
    pub(crate) max_len: usize,
    /// `None` until the first mutation reads the corpus.
    cap: Option<usize>,
    /// The corpus size when last seen, and the executions then.
    corpus: usize,
    since: u64,
}
libafl_bolts::impl_serdeany!(LengthControl);

impl LengthControl {
    /// Growth after `per_log` (libFuzzer's default is 100) runs per log2 of
    /// the cap without a new entry, up to `max_len`.
    pub fn new(per_log: u64, max_len: usize) -> LengthControl {
        debug_assert!(per_log > 0);
        LengthControl {
            per_log,
            max_len,
            cap: None,
            corpus: 0,
            since: 0,
        }
    }

    /// The cap after `executions` with `corpus` entries.
    fn cap(&mut self, corpus: usize, executions: u64) -> usize {
        let Some(cap) = self.cap else {
            return self.max_len;
        };
        let log = (usize::BITS - 1 - cap.max(1).leading_zeros()) as u64;
        if corpus != self.corpus {
            self.corpus = corpus;
            self.since = executions;
        } else if cap < self.max_len && executions.saturating_sub(self.since) > self.per_log * log {
            self.cap = Some((cap + log as usize).min(self.max_len));
            self.since = executions;
        }
        debug_assert!(self.cap.is_some_and(|c| c <= self.max_len.max(4)));
        self.cap.unwrap_or(self.max_len)
    }
}

/// The longest a mutation may make a buffer, if the campaign controls
/// lengths.
pub(crate) fn buffer_limit<S>(state: &mut S) -> Option<usize>
where
    S: HasCorpus<BytesInput> + HasExecutions + HasMetadata,
{
    if state.metadata::<LengthControl>().ok()?.cap.is_none() {
        let start = given_buffers(state);
        let control = state.metadata_mut::<LengthControl>().ok()?;
        control.cap = Some(start.max(4).min(control.max_len.max(4)));
    }
    let corpus = state.corpus().count();
    let executions = *state.executions();
    let control = state.metadata_mut::<LengthControl>().ok()?;
    Some(control.cap(corpus, executions).min(control.max_len))
}

/// The longest buffer among the corpus entries whose bytes were given (a
/// seed, a corpus file), not drawn from a random tail (an entry of only a
/// tail seed: the explorer's random starts).
fn given_buffers<S: HasCorpus<BytesInput>>(state: &S) -> usize {
    let corpus = state.corpus();
    corpus
        .ids()
        .filter_map(|id| {
            let testcase = corpus.get(id).ok()?.borrow();
            let given = testcase
                .input()
                .as_ref()
                .is_some_and(|i| i.as_ref().len() > SEED_BYTES);
            let spans = &testcase.metadata::<DecisionSpans>().ok()?.spans;
            let i = spans
                .iter()
                .position(|s| is_buffer_length(s.2, s.1 as usize))?;
            given.then(|| fill_after(spans, i))
        })
        .max()
        .unwrap_or(0)
}

/// Runs `inner` (byte havoc over the whole input); when the mutant's
/// first buffer came out longer than [`buffer_limit`] allows, takes that
/// length modulo the limit plus one, and drops the bytes the buffer no
/// longer reads, so what follows keeps its place.
pub struct CapBuffer<M> {
    inner: M,
}

impl<M> CapBuffer<M> {
    pub fn new(inner: M) -> CapBuffer<M> {
        CapBuffer { inner }
    }
}

impl<M> Named for CapBuffer<M> {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("CapBuffer");
        &NAME
    }
}

impl<M, S> Mutator<BytesInput, S> for CapBuffer<M>
where
    M: Mutator<BytesInput, S>,
    S: HasCurrentTestcase<BytesInput>
        + HasCurrentCorpusId
        + HasCorpus<BytesInput>
        + HasExecutions
        + HasMetadata,
{
    fn mutate(&mut self, state: &mut S, input: &mut BytesInput) -> Result<MutationResult, Error> {
        let result = self.inner.mutate(state, input)?;
        if result == MutationResult::Skipped {
            return Ok(result);
        }
        let Some((spans, _)) = current(state) else {
            return Ok(result);
        };
        let spans = &spans.spans;
        let Some(i) = spans
            .iter()
            .position(|s| is_buffer_length(s.2, s.1 as usize))
        else {
            return Ok(result);
        };
        let Some(limit) = buffer_limit(state) else {
            return Ok(result);
        };
        let max_len = state
            .metadata::<LengthControl>()
            .map_or(limit, |c| c.max_len);
        let offset = spans[i].0 as usize;
        let bytes = input.as_mut();
        ensure_explicit(bytes, offset + 4);
        let at = SEED_BYTES + offset;
        let n = Value::Mod(max_len as u64 + 1).of(&bytes[at..at + 4]) as usize;
        if n > limit {
            let kept = n % (limit + 1);
            bytes[at..at + 4].copy_from_slice(&(kept as u32).to_be_bytes());
            let end = (at + 4 + n).min(bytes.len());
            if at + 4 + kept < end {
                bytes.drain(at + 4 + kept..end);
            }
        }
        Ok(result)
    }

    fn post_exec(&mut self, state: &mut S, id: Option<CorpusId>) -> Result<(), Error> {
        self.inner.post_exec(state, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_grows_by_its_log_only_after_runs_without_a_new_entry() {
        let mut control = LengthControl::new(10, 100);
        assert_eq!(control.cap(5, 0), 100, "no cap before the corpus is read");
        control.cap = Some(16);
        assert_eq!(control.cap(5, 0), 16);
        // log2(16) = 4: more than 40 runs without a new entry.
        assert_eq!(control.cap(5, 40), 16);
        assert_eq!(control.cap(6, 41), 16, "a new entry starts the count again");
        assert_eq!(control.cap(6, 81), 16);
        assert_eq!(control.cap(6, 82), 20);
        assert_eq!(control.cap(6, 122), 20, "the count starts again at growth");
        assert_eq!(control.cap(6, 123), 24);
        control.cap = Some(99);
        assert_eq!(control.cap(6, 10_000), 100, "up to max_len");
        assert_eq!(control.cap(6, 100_000), 100);
    }
}
