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
//!   spread over the run as PCT assumes.
//!
//! A decision that came from the input's random tail is first written out
//! explicitly (the input is materialized up to it), so the edit sticks.

use std::borrow::Cow;
use std::cell::RefCell;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::rc::Rc;

use dst::decision::{self, Kind, SEED_BYTES};
use libafl::corpus::HasCurrentCorpusId;
use libafl::corpus::{Corpus, CorpusId};
use libafl::inputs::BytesInput;
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::{HasCorpus, HasCurrentTestcase, HasRand};
use libafl::{Error, HasMetadata};
use libafl_bolts::Named;
use libafl_bolts::rands::Rand;

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
    S: HasRand + HasCurrentTestcase<BytesInput> + HasCurrentCorpusId,
{
    fn mutate(&mut self, state: &mut S, input: &mut BytesInput) -> Result<MutationResult, Error> {
        let Some((spans, picked)) = pick_spans(state, 1) else {
            return Ok(MutationResult::Skipped);
        };
        let rand = state.rand_mut();
        let (offset, width, kind) = spans.spans[picked.start];
        let (offset, width) = (offset as usize, width as usize);
        if width == 0 {
            return Ok(MutationResult::Skipped);
        }
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
    S: HasRand + HasCurrentTestcase<BytesInput>,
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
                .filter(|(_, s)| s.2 == Kind::Length as u8 && s.1 == 4)
                .map(|(i, &(offset, _, _))| {
                    // The fill that follows (none for an empty buffer).
                    let len = spans
                        .get(i + 1)
                        .filter(|n| n.0 == offset + 4 && Kind::from_u8(n.2) == Some(Kind::Fill))
                        .map_or(0, |n| n.1 as usize);
                    (offset as usize, len)
                })
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
        if self.inner.mutate(state, &mut buffer)? == MutationResult::Skipped {
            return Ok(MutationResult::Skipped);
        }
        let data: &[u8] = buffer.as_ref();
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
