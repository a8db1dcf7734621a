//! What the explorer learns from each run, in LibAFL's terms.
//!
//! - [`PropertyObserver`] reads the region after every run (including runs
//!   that end up as solutions, which LibAFL's feedbacks never see) and folds
//!   it into the campaign kept in the state's metadata.
//! - [`PropertyFeedback`] keeps an input when it first reached a property,
//!   first made a `sometimes` true, first broke a property, or improved a
//!   property's guidance; it tags kept inputs with their decision spans for
//!   the decision-aware mutators.
//! - [`FindingObjective`] makes an input a solution when it breaks a
//!   must-hold property, crashes or times out with a signature not seen yet.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeSet;

use dst::region::RegionRef;
use dst_kernel::{Campaign, Outcome, RunRecord, Signature};
use libafl::corpus::Testcase;
use libafl::executors::ExitKind;
use libafl::feedbacks::{Feedback, StateInitializer};
use libafl::inputs::BytesInput;
use libafl::observers::Observer;
use libafl::state::HasExecutions;
use libafl::{Error, HasMetadata};
use libafl_bolts::Named;
use libafl_bolts::tuples::{Handle, Handled, MatchNameRef};
use serde::{Deserialize, Serialize};

thread_local! {
    /// The region the target runs against, set once by the explorer.
    static REGION: RefCell<Option<RegionRef<'static>>> = const { RefCell::new(None) };
    /// The crash the harness caught in the last run, if any.
    static LAST_CRASH: RefCell<Option<Outcome>> = const { RefCell::new(None) };
}

/// Makes `region` the one the observers read, until the returned guard is
/// dropped.
///
/// # Safety
/// The region must outlive the guard.
pub(crate) unsafe fn set_region(region: RegionRef<'_>) -> RegionGuard {
    // SAFETY: the caller keeps the region alive until the guard clears it.
    let region = unsafe { region.unbounded() };
    REGION.with(|r| *r.borrow_mut() = Some(region));
    RegionGuard
}

/// Clears the observers' region when dropped.
pub(crate) struct RegionGuard;

impl Drop for RegionGuard {
    fn drop(&mut self) {
        REGION.with(|r| *r.borrow_mut() = None);
    }
}

pub(crate) fn region() -> RegionRef<'static> {
    REGION.with(|r| {
        r.borrow()
            .expect("the explorer sets the region before any run")
    })
}

pub(crate) fn set_last_crash(crash: Option<Outcome>) {
    LAST_CRASH.with(|c| *c.borrow_mut() = crash);
}

/// The crash of a run that killed the explorer's own process (an in-process
/// target): LibAFL's handler saw it die, but not of what.
fn process_death() -> Outcome {
    Outcome::Crash {
        cause: "signal".to_string(),
        message: "the target was killed by a signal".to_string(),
        location: None,
    }
}

/// Whether `signature` is that of [`process_death`]: it names no failure
/// a replay could confirm (the replay in a forked child names the signal).
pub(crate) fn is_process_death(signature: &Signature) -> bool {
    process_death().signature().as_ref() == Some(signature)
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
}

impl PropertyObserver {
    pub fn new() -> PropertyObserver {
        PropertyObserver {
            name: Cow::Borrowed("dst-properties"),
            novel: false,
            signature: None,
        }
    }
}

impl Default for PropertyObserver {
    fn default() -> Self {
        PropertyObserver::new()
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
        let mut crash = LAST_CRASH.with(|c| c.borrow_mut().take());
        if crash.is_none() && *exit_kind == ExitKind::Crash {
            crash = Some(process_death());
        }
        let meta = state.metadata_mut::<CampaignMeta>()?;
        let record = RunRecord::summary(
            region(),
            crash,
            *exit_kind == ExitKind::Timeout,
            &meta.campaign.catalog,
        );
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
        _observers: &OT,
        testcase: &mut Testcase<BytesInput>,
    ) -> Result<(), Error> {
        testcase.add_metadata(DecisionSpans::of(region()));
        Ok(())
    }
}

/// Tags every kept input with its decision spans (for inputs kept by the
/// coverage feedbacks, which know nothing of decisions).
#[derive(Debug, Default)]
pub struct SpansFeedback;

impl Named for SpansFeedback {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("dst-decision-spans");
        &NAME
    }
}

impl<S> StateInitializer<S> for SpansFeedback {}

impl<EM, OT, S> Feedback<EM, BytesInput, OT, S> for SpansFeedback {
    fn append_metadata(
        &mut self,
        _state: &mut S,
        _manager: &mut EM,
        _observers: &OT,
        testcase: &mut Testcase<BytesInput>,
    ) -> Result<(), Error> {
        if !testcase.has_metadata::<DecisionSpans>() {
            testcase.add_metadata(DecisionSpans::of(region()));
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
        testcase.add_metadata(DecisionSpans::of(region()));
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
