//! What the explorer learns from each run, in LibAFL's terms.
//!
//! - [`PropertyObserver`] reads the region after every run (including runs
//!   that end up as solutions, which LibAFL's feedbacks never see) and folds
//!   it into the campaign kept in the state's metadata. It reads it from the
//!   [`Target`] it shares with the harness: no other channel.
//! - [`PropertyFeedback`] keeps an input when it first reached a property,
//!   first made a `sometimes` true, first broke a property, or improved a
//!   property's guidance; it tags kept inputs with their decision spans for
//!   the decision-aware mutators.
//! - [`FindingObjective`] makes an input a solution when it breaks a
//!   must-hold property, crashes or times out with a signature not seen yet.
//! - [`EdgesFeedback`] is LibAFL's maximizing map feedback on the edge map,
//!   judging the raw counts against the ceilings of the history's classes
//!   in one vector pass, and classifying the counts only of runs it keeps.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;

use dst::region::RegionRef;
use dst_kernel::finding::process_death;
use dst_kernel::{Campaign, End, Executor, Outcome, RunRecord, Signature};
use libafl::corpus::Testcase;
use libafl::executors::ExitKind;
use libafl::feedbacks::{Feedback, MapFeedbackMetadata, StateInitializer};
use libafl::inputs::BytesInput;
use libafl::observers::Observer;
use libafl::state::HasExecutions;
use libafl::{Error, HasMetadata, HasNamedMetadata};
use libafl_bolts::Named;
use libafl_bolts::tuples::{Handle, Handled, MatchNameRef};
use serde::{Deserialize, Serialize};

/// The target as the harness, the observer and the feedbacks share it: the
/// harness runs it and leaves how the run ended; the observer and the
/// feedbacks then read its region. The one channel between them.
pub(crate) struct Target {
    pub exec: Box<dyn Executor>,
    /// How the last run ended; `None` while a run is under way (so also
    /// when LibAFL's crash or timeout handler observes a run that killed
    /// this process, whose region cannot be trusted).
    pub end: Option<End>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("end", &self.end).finish()
    }
}

pub(crate) type SharedTarget = Rc<RefCell<Target>>;

/// The decision spans of the last run, or none if it did not end (see
/// [`Target::end`]).
fn last_spans(target: Option<&SharedTarget>) -> DecisionSpans {
    target
        .and_then(|t| t.try_borrow().ok())
        .filter(|t| t.end.is_some())
        .map_or_else(DecisionSpans::default, |t| {
            DecisionSpans::of(t.exec.region())
        })
}

/// The campaign, as state metadata (so restarting managers carry it over).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CampaignMeta {
    pub campaign: Campaign,
}
libafl_bolts::impl_serdeany!(CampaignMeta);

/// Failure signatures already turned into solutions (as JSON text: state
/// metadata goes through a non-self-describing format, which tagged enums
/// do not survive).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SeenSignatures {
    pub seen: BTreeSet<String>,
}
libafl_bolts::impl_serdeany!(SeenSignatures);

/// The failure signature of a solution, as the objective saw it (JSON text,
/// see [`SeenSignatures`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SolutionSignature {
    pub signature: String,
    /// The campaign's executions when the objective saw it (this client's).
    #[serde(default)]
    pub executions: u64,
}
libafl_bolts::impl_serdeany!(SolutionSignature);

impl SolutionSignature {
    pub fn new(signature: &Signature) -> SolutionSignature {
        SolutionSignature {
            signature: serde_json::to_string(signature).expect("signatures serialize"),
            executions: 0,
        }
    }

    pub fn signature(&self) -> Option<Signature> {
        serde_json::from_str(&self.signature).ok()
    }
}

/// Finding folders that existed when the campaign started (so a restarted
/// client can still tell which findings are this campaign's).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FindingsAtStart {
    pub names: BTreeSet<String>,
}
libafl_bolts::impl_serdeany!(FindingsAtStart);

/// The decisions a kept input took: (stream offset, width, kind) each.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DecisionSpans {
    pub spans: Vec<(u32, u16, u8)>,
    /// The run's contested scheduling points (`Header::contested`).
    #[serde(default)]
    pub contested: u64,
}
libafl_bolts::impl_serdeany!(DecisionSpans);

impl DecisionSpans {
    /// The spans of the run that just ended in `region`.
    pub fn of(region: RegionRef<'_>) -> DecisionSpans {
        DecisionSpans {
            spans: region
                .decisions()
                .iter()
                .map(|d| (d.offset as u32, d.width, d.kind))
                .collect(),
            contested: region
                .header()
                .contested
                .load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// Observes the region after each run; see the module docs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PropertyObserver {
    name: Cow<'static, str>,
    /// The last run added something about properties.
    pub novel: bool,
    /// The last run's failure signature, if it failed.
    pub signature: Option<Signature>,
    #[serde(skip)]
    target: Option<SharedTarget>,
}

impl PropertyObserver {
    pub(crate) fn new(target: SharedTarget) -> PropertyObserver {
        PropertyObserver {
            name: Cow::Borrowed("dst-properties"),
            novel: false,
            signature: None,
            target: Some(target),
        }
    }

    /// The decision spans of the last run.
    fn spans(&self) -> DecisionSpans {
        last_spans(self.target.as_ref())
    }

    /// The record of the last run: read from the region if the run ended,
    /// else (LibAFL's handler saw it kill this process) its death alone.
    fn last_record(&self, exit_kind: &ExitKind, catalog: &[dst::catalog::SiteInfo]) -> RunRecord {
        let ended = self
            .target
            .as_ref()
            .and_then(|t| t.try_borrow().ok())
            .and_then(|t| {
                let end = t.end.clone()?;
                Some(RunRecord::summary(t.exec.region(), end, catalog))
            });
        ended.unwrap_or_else(|| {
            RunRecord::outcome_only(match exit_kind {
                ExitKind::Timeout => Outcome::Timeout,
                _ => process_death(),
            })
        })
    }
}

impl Named for PropertyObserver {
    fn name(&self) -> &Cow<'static, str> {
        &self.name
    }
}

impl<S: HasMetadata> Observer<BytesInput, S> for PropertyObserver {
    fn pre_exec(&mut self, _state: &mut S, _input: &BytesInput) -> Result<(), Error> {
        self.novel = false;
        self.signature = None;
        Ok(())
    }

    fn post_exec(
        &mut self,
        state: &mut S,
        input: &BytesInput,
        exit_kind: &ExitKind,
    ) -> Result<(), Error> {
        let meta = state.metadata_mut::<CampaignMeta>()?;
        let record = self.last_record(exit_kind, &meta.campaign.catalog);
        let novelty = meta.campaign.observe(input.as_ref(), &record);
        self.novel = !novelty.first_hit.is_empty()
            || !novelty.first_example.is_empty()
            || !novelty.first_counterexample.is_empty()
            || !novelty.better_guidance.is_empty();
        self.signature = record.signature();
        Ok(())
    }
}

/// Keeps inputs that taught the campaign something about properties.
#[derive(Debug)]
pub struct PropertyFeedback {
    observer: Handle<PropertyObserver>,
    initial: Option<Campaign>,
}

impl PropertyFeedback {
    /// `initial` is installed in the state unless it already holds a campaign
    /// (a resumed or restarted one).
    pub fn new(observer: &PropertyObserver, initial: Campaign) -> PropertyFeedback {
        PropertyFeedback {
            observer: observer.handle(),
            initial: Some(initial),
        }
    }
}

impl Named for PropertyFeedback {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("dst-property-feedback");
        &NAME
    }
}

impl<S: HasMetadata> StateInitializer<S> for PropertyFeedback {
    fn init_state(&mut self, state: &mut S) -> Result<(), Error> {
        if !state.has_metadata::<CampaignMeta>()
            && let Some(campaign) = self.initial.take()
        {
            state.add_metadata(CampaignMeta { campaign });
        }
        if !state.has_metadata::<SeenSignatures>() {
            state.add_metadata(SeenSignatures::default());
        }
        Ok(())
    }
}

impl<EM, OT: MatchNameRef, S: HasMetadata> Feedback<EM, BytesInput, OT, S> for PropertyFeedback {
    fn is_interesting(
        &mut self,
        _state: &mut S,
        _manager: &mut EM,
        _input: &BytesInput,
        observers: &OT,
        _exit_kind: &ExitKind,
    ) -> Result<bool, Error> {
        Ok(observers.get(&self.observer).is_some_and(|o| o.novel))
    }

    fn append_metadata(
        &mut self,
        _state: &mut S,
        _manager: &mut EM,
        observers: &OT,
        testcase: &mut Testcase<BytesInput>,
    ) -> Result<(), Error> {
        if let Some(observer) = observers.get(&self.observer) {
            testcase.add_metadata(observer.spans());
        }
        Ok(())
    }
}

/// Tags every kept input with its decision spans (for inputs kept by the
/// coverage feedbacks, which know nothing of decisions).
#[derive(Debug)]
pub struct SpansFeedback {
    observer: Handle<PropertyObserver>,
}

impl SpansFeedback {
    pub fn new(observer: &PropertyObserver) -> SpansFeedback {
        SpansFeedback {
            observer: observer.handle(),
        }
    }
}

impl Named for SpansFeedback {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("dst-decision-spans");
        &NAME
    }
}

impl<S> StateInitializer<S> for SpansFeedback {}

impl<EM, OT: MatchNameRef, S> Feedback<EM, BytesInput, OT, S> for SpansFeedback {
    fn append_metadata(
        &mut self,
        _state: &mut S,
        _manager: &mut EM,
        observers: &OT,
        testcase: &mut Testcase<BytesInput>,
    ) -> Result<(), Error> {
        if !testcase.has_metadata::<DecisionSpans>()
            && let Some(observer) = observers.get(&self.observer)
        {
            testcase.add_metadata(observer.spans());
        }
        Ok(())
    }
}

/// Makes a run a solution when it fails with a signature not seen before.
#[derive(Debug)]
pub struct FindingObjective {
    observer: Handle<PropertyObserver>,
}

impl FindingObjective {
    pub fn new(observer: &PropertyObserver) -> FindingObjective {
        FindingObjective {
            observer: observer.handle(),
        }
    }
}

impl Named for FindingObjective {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("dst-finding");
        &NAME
    }
}

impl<S> StateInitializer<S> for FindingObjective {}

impl<EM, OT: MatchNameRef, S: HasMetadata + HasExecutions> Feedback<EM, BytesInput, OT, S>
    for FindingObjective
{
    fn is_interesting(
        &mut self,
        state: &mut S,
        _manager: &mut EM,
        _input: &BytesInput,
        observers: &OT,
        _exit_kind: &ExitKind,
    ) -> Result<bool, Error> {
        let Some(signature) = observers
            .get(&self.observer)
            .and_then(|o| o.signature.clone())
        else {
            return Ok(false);
        };
        let seen = state.metadata_or_insert_with(SeenSignatures::default);
        Ok(seen
            .seen
            .insert(SolutionSignature::new(&signature).signature))
    }

    fn append_metadata(
        &mut self,
        state: &mut S,
        _manager: &mut EM,
        observers: &OT,
        testcase: &mut Testcase<BytesInput>,
    ) -> Result<(), Error> {
        if let Some(observer) = observers.get(&self.observer) {
            testcase.add_metadata(observer.spans());
        }
        if let Some(signature) = observers
            .get(&self.observer)
            .and_then(|o| o.signature.clone())
        {
            let mut meta = SolutionSignature::new(&signature);
            meta.executions = *state.executions();
            testcase.add_metadata(meta);
        }
        Ok(())
    }
}

/// AFL's hit-count class of a count: 0, 1, 2, 3, 4-7, 8-15, 16-31, 32-127
/// and 128-255 become 0, 1, 2, 4, 8, 16, 32, 64 and 128.
pub(crate) const fn count_class(count: u8) -> u8 {
    match count {
        0..=2 => count,
        3 => 4,
        4..=7 => 8,
        8..=15 => 16,
        16..=31 => 32,
        32..=127 => 64,
        _ => 128,
    }
}

static COUNT_CLASSES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = count_class(i as u8);
        i += 1;
    }
    table
};

/// Buckets a coverage map's counts in place into AFL's hit-count classes,
/// as LibAFL's `HitcountsMapObserver` does after a run, but a word at a
/// time, skipping the zero words most of a map holds (as AFL does).
/// LibAFL 0.16.1 looks up every pair of bytes, zero or not: on the 1 KiB
/// decision map of an in-process run that was a fifth of a small target's
/// time. The harness calls this after each run; the observers are then
/// plain map observers.
pub fn classify_counts(map: &mut [u8]) {
    // SAFETY: any eight bytes are a valid u64; `align_to_mut` only views
    // the aligned middle of the slice as words, the ends stay bytes.
    let (head, words, tail) = unsafe { map.align_to_mut::<u64>() };
    for byte in head.iter_mut().chain(tail.iter_mut()) {
        *byte = COUNT_CLASSES[usize::from(*byte)];
    }
    for word in words.iter_mut().filter(|w| **w != 0) {
        let mut bytes = word.to_ne_bytes();
        for byte in &mut bytes {
            *byte = COUNT_CLASSES[usize::from(*byte)];
        }
        *word = u64::from_ne_bytes(bytes);
    }
}

/// The largest raw count whose class ([`classify_counts`]) is at most
/// `class`: a count above it is in a higher class.
const fn class_ceiling(class: u8) -> u8 {
    match class {
        0..=2 => class,
        3..=4 => 3,
        5..=8 => 7,
        9..=16 => 15,
        17..=32 => 31,
        33..=64 => 127,
        _ => 255,
    }
}

/// Whether any raw count of `map` is above its `ceiling` (the
/// [`class_ceiling`] of the history's class there): the novelty check of
/// LibAFL's maximizing map feedback on the classified map, without
/// classifying it. Blocks of 64 bytes compare branch-free (the compiler
/// vectorizes them), so a run costs one pass of vector compares.
pub fn above_ceilings(map: &[u8], ceiling: &[u8]) -> bool {
    debug_assert!(ceiling.len() >= map.len(), "the ceilings cover the map");
    let ceiling = &ceiling[..map.len()];
    let mut blocks = map.chunks_exact(64);
    let mut limits = ceiling.chunks_exact(64);
    for (block, limit) in (&mut blocks).zip(&mut limits) {
        let mut above = 0u8;
        for (count, limit) in block.iter().zip(limit) {
            above |= u8::from(count > limit);
        }
        if above != 0 {
            return true;
        }
    }
    blocks
        .remainder()
        .iter()
        .zip(limits.remainder())
        .any(|(count, limit)| count > limit)
}

/// LibAFL's `MaxMapFeedback` on the edge map (`inner`, which keeps the
/// history and the map's metadata when an input is kept), deciding novelty
/// on the raw counts ([`above_ceilings`]) and classifying them only for a
/// run that is kept: most runs are neither classified nor compared with
/// the history byte by byte. `runs` counts runs (the harness bumps it
/// before each), so a run's counts are classified once however often it is
/// asked.
pub struct EdgesFeedback<F> {
    inner: F,
    map: *mut u8,
    len: usize,
    runs: Rc<Cell<u64>>,
    /// The history's class ceilings, rebuilt whenever the history grows.
    ceilings: Vec<u8>,
    /// The run last judged, and whether it was novel.
    judged: Option<(u64, bool)>,
    /// The run last classified.
    classified: Option<u64>,
}

impl<F> EdgesFeedback<F> {
    /// # Safety
    ///
    /// `map` points to `len` bytes (the edge map `inner`'s observer
    /// watches) that stay valid while the feedback lives, and that nothing
    /// else accesses while it runs.
    pub unsafe fn new(inner: F, map: *mut u8, len: usize, runs: Rc<Cell<u64>>) -> EdgesFeedback<F> {
        EdgesFeedback {
            inner,
            map,
            len,
            runs,
            ceilings: Vec::new(),
            judged: None,
            classified: None,
        }
    }

    fn map(&mut self) -> &mut [u8] {
        // SAFETY: `new`'s contract: the map is valid and only this
        // feedback touches it now (the run has ended).
        unsafe { std::slice::from_raw_parts_mut(self.map, self.len) }
    }

    /// The history of `state` (as long as the map) and the ceilings of its
    /// classes, rebuilt from it when `rebuild` or when they are stale.
    fn history<S: HasNamedMetadata>(&mut self, state: &mut S, rebuild: bool) -> Result<(), Error>
    where
        F: Named,
    {
        let meta = state
            .named_metadata_map_mut()
            .get_mut::<MapFeedbackMetadata<u8>>(self.inner.name())
            .ok_or_else(|| Error::key_not_found("the edge map's history"))?;
        if meta.history_map.len() < self.len {
            meta.history_map.resize(self.len, 0);
        }
        if rebuild || self.ceilings.len() != meta.history_map.len() {
            self.ceilings.clear();
            self.ceilings
                .extend(meta.history_map.iter().map(|&class| class_ceiling(class)));
        }
        Ok(())
    }
}

impl<F> std::fmt::Debug for EdgesFeedback<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgesFeedback")
            .field("len", &self.len)
            .finish()
    }
}

impl<F: Named> Named for EdgesFeedback<F> {
    fn name(&self) -> &Cow<'static, str> {
        self.inner.name()
    }
}

impl<F: StateInitializer<S>, S> StateInitializer<S> for EdgesFeedback<F> {
    fn init_state(&mut self, state: &mut S) -> Result<(), Error> {
        self.inner.init_state(state)
    }
}

impl<F, EM, OT, S> Feedback<EM, BytesInput, OT, S> for EdgesFeedback<F>
where
    F: Feedback<EM, BytesInput, OT, S> + Named,
    S: HasNamedMetadata,
{
    fn is_interesting(
        &mut self,
        state: &mut S,
        _manager: &mut EM,
        _input: &BytesInput,
        _observers: &OT,
        _exit_kind: &ExitKind,
    ) -> Result<bool, Error> {
        let run = self.runs.get();
        if let Some((judged, novel)) = self.judged
            && judged == run
        {
            return Ok(novel);
        }
        self.history(state, false)?;
        // SAFETY: as in `map`.
        let map = unsafe { std::slice::from_raw_parts(self.map, self.len) };
        let novel = above_ceilings(map, &self.ceilings);
        self.judged = Some((run, novel));
        Ok(novel)
    }

    fn append_metadata(
        &mut self,
        state: &mut S,
        manager: &mut EM,
        observers: &OT,
        testcase: &mut Testcase<BytesInput>,
    ) -> Result<(), Error> {
        let run = self.runs.get();
        if self.classified != Some(run) {
            classify_counts(self.map());
            self.classified = Some(run);
        }
        self.inner
            .append_metadata(state, manager, observers, testcase)?;
        self.history(state, true)
    }
}

#[cfg(test)]
mod tests {
    use libafl::observers::{HitcountsMapObserver, Observer, StdMapObserver};

    use super::*;

    #[test]
    fn classes_are_libafls_hitcounts_at_every_count_and_alignment() {
        // Every count at every offset of an unaligned, odd-length map, with
        // zero words between: the same bytes as LibAFL's observer leaves.
        let mut raw: Vec<u8> = (0..=255u8).chain(std::iter::repeat_n(0, 37)).collect();
        raw.extend((0..=255u8).rev());
        for start in 0..8 {
            let mut ours = raw[start..].to_vec();
            classify_counts(&mut ours);
            let mut theirs = raw[start..].to_vec();
            let mut observer = HitcountsMapObserver::new(unsafe {
                // SAFETY: `theirs` outlives the observer and is not moved.
                StdMapObserver::from_mut_ptr("map", theirs.as_mut_ptr(), theirs.len())
            });
            let mut state = ();
            observer
                .post_exec(
                    &mut state,
                    &libafl::inputs::BytesInput::new(vec![]),
                    &ExitKind::Ok,
                )
                .unwrap();
            drop(observer);
            assert_eq!(ours, theirs, "from offset {start}");
        }
        assert_eq!(COUNT_CLASSES[3], 4);
        // A raw count is above its history's ceiling exactly when its class
        // is above the history's class (LibAFL's novelty), at every count,
        // class and length.
        let classes = [0u8, 1, 2, 4, 8, 16, 32, 64, 128];
        for count in 0..=255u8 {
            for class in classes {
                assert_eq!(
                    count > class_ceiling(class),
                    COUNT_CLASSES[usize::from(count)] > class,
                    "{count} {class}"
                );
            }
        }
        for len in [0, 1, 63, 64, 65, 200] {
            let raw: Vec<u8> = (0..len).map(|i| (i * 37 % 256) as u8).collect();
            let mut history = raw.clone();
            classify_counts(&mut history);
            let ceilings: Vec<u8> = history.iter().map(|&c| class_ceiling(c)).collect();
            assert!(!above_ceilings(&raw, &ceilings), "{len}");
            for at in 0..len {
                let mut lower = history.clone();
                lower[at] = classes[classes
                    .iter()
                    .position(|&c| c == lower[at])
                    .unwrap()
                    .saturating_sub(1)];
                let ceilings: Vec<u8> = lower.iter().map(|&c| class_ceiling(c)).collect();
                assert_eq!(above_ceilings(&raw, &ceilings), raw[at] != 0, "{len} {at}");
            }
        }
        assert_eq!(COUNT_CLASSES[127], 64);
        assert_eq!(COUNT_CLASSES[128], 128);
    }
}
