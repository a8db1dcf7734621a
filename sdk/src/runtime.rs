//! The native SDK's state: which region this process writes its runs to
//! (one [`Recorder`] for it), and local mode (no explorer present).
//!
//! A region is either *attached* by a controller ([`attach`]) or, on first
//! use, created by local mode from the environment (`DST_SEED`, `DST_INPUT`,
//! `DST_OUTPUT`, `DST_TRACE`, `DST_ABORT_ON_FAILURE`). Assertion fast paths read
//! only the `MODE` atomic; everything else goes through the slow paths here,
//! which write the run through the recorder (`crate::protocol`) and add what
//! local mode shows (stderr lines, `DST_OUTPUT` records, the abort).
//! Executors of guest levels do not come here: they hold recorders of their
//! own.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::catalog::{self, Site};
use crate::decision::{self, Value};
pub use crate::protocol::SiteText;
use crate::protocol::{self, Recorder};
use crate::region::{self, FLAG_TRACE_SITES, Layout, Region, RegionError, RegionRef};

const UNINIT: u8 = 0;
/// Local mode without `DST_OUTPUT`: nobody reads passing evaluations.
const QUIET: u8 = 1;
/// A controller or `DST_OUTPUT` reads every evaluation.
const RECORDING: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(UNINIT);
/// Base of the current, validated region; null when none.
/// The current region: null, or a `Region` leaked by [`attach`], by the
/// shared-memory attach or by local mode, never freed (a view of it may be
/// in use on another thread), so its views are `'static`. One small
/// allocation per region attached.
static REGION: AtomicPtr<Region> = AtomicPtr::new(std::ptr::null_mut());
static ABORT_ON_FAILURE: AtomicBool = AtomicBool::new(false);
static INNER: Mutex<Inner> = Mutex::new(Inner {
    recorder: None,
    callers: CallerIds([(0, 0); CALLER_IDS]),
});
static LOCAL: OnceLock<Local> = OnceLock::new();

/// What the decision lock guards: the one writer of the current region's
/// runs, and the caller-id cache.
struct Inner {
    /// The recorder of the current region (made anew when the region
    /// changes: see [`Inner::recorder`]).
    recorder: Option<Recorder<&'static Region>>,
    callers: CallerIds,
}

impl Inner {
    /// The recorder of `region`, the current one.
    fn recorder(&mut self, region: &'static Region) -> &mut Recorder<&'static Region> {
        match &mut self.recorder {
            Some(recorder) if std::ptr::eq(*recorder.handle(), region) => {}
            slot => *slot = Some(Recorder::new(region)),
        }
        self.recorder.as_mut().expect("set above")
    }
}

/// Slots of [`CallerIds`].
const CALLER_IDS: usize = 64;

/// The site ids of recent decision callers, by the address of their
/// `Location` (one per call site, static): hashing a call site's file name
/// on every decision was about a fifth of a decision's cost. Direct-mapped;
/// a slot taken by another caller is hashed again.
struct CallerIds([(usize, u32); CALLER_IDS]);

impl CallerIds {
    fn slot(key: usize) -> usize {
        (key / align_of::<std::panic::Location<'static>>()) % CALLER_IDS
    }

    fn id(&mut self, loc: &'static std::panic::Location<'static>) -> u32 {
        let key = std::ptr::from_ref(loc) as usize;
        let slot = &mut self.0[Self::slot(key)];
        if slot.0 != key {
            *slot = (key, DecisionSite::Caller(loc).id());
        }
        debug_assert_eq!(slot.1, DecisionSite::Caller(loc).id(), "a stale caller id");
        slot.1
    }
}

struct Local {
    region: &'static Region,
    output: Option<Mutex<File>>,
    trace: bool,
    /// The input came from `DST_INPUT` or `DST_SEED`: a replay, so threads
    /// are under control (see [`control_key`]).
    #[cfg(feature = "threads")]
    explicit: bool,
}

fn inner() -> MutexGuard<'static, Inner> {
    INNER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// True when a passing evaluation needs no work: the assertion fast path.
#[doc(hidden)]
#[inline(always)]
pub fn __quiet() -> bool {
    MODE.load(Ordering::Relaxed) == QUIET
}

/// Attaches the SDK to a controller's region: from now on decisions come from
/// its input and outcomes go to it.
///
/// # Safety
/// `base` must be valid for reads and writes of `len` bytes until [`detach`]
/// is called, and the controller must follow the region protocol (reset only
/// between runs).
pub unsafe fn attach(base: *mut u8, len: usize) -> Result<(), RegionError> {
    // SAFETY: forwarded from this function's contract.
    let region = unsafe { Region::borrowed(base, len)? };
    install(Box::leak(Box::new(region)));
    Ok(())
}

/// In a forked child that attached a region: crashes are recorded in it
/// (signal, fault address, stack) by the SDK's handler, in place of any
/// handler inherited from the parent. For executors that fork per run.
#[cfg(unix)]
#[doc(hidden)]
pub fn __record_crashes_in_child() {
    if let Some(region) = current() {
        crate::crash::install_in_child(region);
    }
}

/// Makes `region` the current one, in recording mode.
fn install(region: &'static Region) {
    debug_assert!(
        region.view().sections().total_size > 0,
        "only validated regions are installed"
    );
    let mut inner = inner();
    inner.recorder = None;
    REGION.store(std::ptr::from_ref(region).cast_mut(), Ordering::Release);
    ABORT_ON_FAILURE.store(abort_on_failure(), Ordering::Relaxed);
    WHOLE_PROCESS.store(false, Ordering::Relaxed);
    MODE.store(RECORDING, Ordering::Release);
}

/// The run is the whole process (a region shared with an explorer in
/// another process, or local mode), so any thread may start a controlled
/// run; with an in-process controller only the thread running the target
/// body (`dst::thread::run_body`) does.
static WHOLE_PROCESS: AtomicBool = AtomicBool::new(false);

pub(crate) fn set_whole_process() {
    WHOLE_PROCESS.store(true, Ordering::Relaxed);
}

#[cfg(feature = "threads")]
/// Whether the SDK runs in local mode (no explorer).
pub(crate) fn is_local() -> bool {
    local().is_some()
}

#[cfg(feature = "threads")]
pub(crate) fn whole_process() -> bool {
    WHOLE_PROCESS.load(Ordering::Relaxed) || local().is_some()
}

/// The base of the region a controller attached, if any.
pub fn attached() -> *mut u8 {
    match current() {
        Some(region) if MODE.load(Ordering::Acquire) == RECORDING && local().is_none() => {
            region.base()
        }
        _ => std::ptr::null_mut(),
    }
}

/// The current region, if there is one (no local mode is started).
fn current() -> Option<RegionRef<'static>> {
    current_region().map(Region::view)
}

/// The current region itself, if there is one.
fn current_region() -> Option<&'static Region> {
    let region = REGION.load(Ordering::Acquire);
    // SAFETY: REGION holds null or a leaked, never freed `Region` (see there).
    (!region.is_null()).then(|| unsafe { &*region })
}

/// `DST_ABORT_ON_FAILURE`, read once per process.
fn abort_on_failure() -> bool {
    static FLAG: OnceLock<bool> = OnceLock::new();
    *FLAG.get_or_init(|| env_flag("DST_ABORT_ON_FAILURE"))
}

/// Detaches from the controller's region. The next SDK call falls back to
/// local mode.
pub fn detach() {
    let mut inner = inner();
    inner.recorder = None;
    MODE.store(UNINIT, Ordering::Release);
    REGION.store(std::ptr::null_mut(), Ordering::Release);
}

/// The message of the first must-hold property that failed in the current
/// run (in local mode: in this process), if any.
pub fn first_failure() -> Option<&'static str> {
    let failure = region().header().first_failure.load(Ordering::Acquire);
    let index = usize::try_from(failure).ok()?.checked_sub(1)?;
    Some(catalog::get(index).map_or("?", |site| site.message))
}

/// The coverage map of an explorer's region, attaching to the one named in
/// `DST_REGION` if needed; empty without an explorer. For coverage
/// callbacks of instrumented C code (libdst), which cache the answer. It
/// never starts local mode: edges run before `main` (in constructors),
/// before the program's catalog is registered, and local mode sizes its
/// region from that catalog.
pub fn coverage_map() -> (*mut u8, usize) {
    if REGION.load(Ordering::Acquire).is_null()
        && std::env::var_os(crate::shm::REGION_ENV).is_none()
    {
        return (std::ptr::null_mut(), 0);
    }
    region().coverage_ptr()
}

/// Bytes of the coverage map the program's edges use, when known (0: the
/// whole map). Set by coverage callbacks that number edges densely; the
/// fork server reports it, so the explorer observes only that part.
static COVERAGE_EXTENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Records that edges use the first `bytes` of the coverage map.
pub fn set_coverage_extent(bytes: u64) {
    COVERAGE_EXTENT.fetch_max(bytes, Ordering::Relaxed);
}

/// See [`set_coverage_extent`].
pub fn coverage_extent() -> u64 {
    COVERAGE_EXTENT.load(Ordering::Relaxed)
}

#[cfg(all(unix, feature = "forkserver"))]
/// Attaches to the segment named in `DST_REGION` (starting local mode
/// instead when there is none); returns whether a shared region is in use.
pub(crate) fn attach_shared() -> bool {
    let _ = region();
    shared_region().is_some()
}

#[cfg(all(unix, feature = "forkserver"))]
/// The header of the attached shared segment (a process executor's), if
/// one is attached.
pub(crate) fn shared_header() -> Option<&'static crate::region::Header> {
    shared_region().map(|region| region.view().header())
}

#[cfg(all(unix, feature = "forkserver"))]
/// The attached shared segment's region (a process executor's), if one is
/// attached.
pub(crate) fn shared_region() -> Option<&'static Region> {
    if local().is_some() {
        return None;
    }
    let region = REGION.load(Ordering::Acquire);
    // SAFETY: REGION holds null or a leaked, never freed `Region`.
    (!region.is_null()).then(|| unsafe { &*region })
}

#[cfg(all(unix, feature = "forkserver"))]
/// In a fork server's learning run, whose region is a private copy: runs
/// `input` instead of the one the region holds.
pub(crate) fn replace_input(input: &[u8]) {
    let region = region();
    let flags = region.header().flags.load(Ordering::Relaxed);
    region.reset(input, flags);
}

#[cfg(feature = "threads")]
/// Sets `STATUS_*` bits of the current run.
pub(crate) fn set_status(bits: u64) {
    region().header().status.fetch_or(bits, Ordering::Relaxed);
}

/// The current region, initializing the SDK (a shared segment, else local
/// mode) if nothing is attached.
fn region() -> RegionRef<'static> {
    current_or_init().view()
}

/// [`region`], the region itself.
fn current_or_init() -> &'static Region {
    loop {
        if let Some(region) = current_region() {
            return region;
        }
        init();
    }
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The SDK's one initialization, on its first call with nothing attached:
/// the segment an explorer's process executor named in `DST_REGION` (once
/// per process), else local mode from the environment.
fn init() {
    // Under the wasm executor, decisions, assertions and events go to the
    // host (`crate::wasm`); what else reads a region sees an empty one.
    #[cfg(target_family = "wasm")]
    if crate::wasm::hosted() {
        let layout = Layout {
            input_capacity: 0,
            coverage_size: 0,
            sites_capacity: 1,
            decisions_capacity: 1,
            events_capacity: 1,
        };
        install(Box::leak(Box::new(Region::new(layout))));
        return;
    }
    static SHARED: OnceLock<bool> = OnceLock::new();
    if *SHARED.get_or_init(attach_segment) && !REGION.load(Ordering::Acquire).is_null() {
        return;
    }
    let local = LOCAL.get_or_init(|| {
        let input = local_input();
        let layout = Layout {
            input_capacity: input.len(),
            coverage_size: 0,
            // Room for sites registered later (C fault names, libraries
            // loaded at run time).
            sites_capacity: catalog::count() + 1024,
            decisions_capacity: 1 << 16,
            events_capacity: 1 << 16,
        };
        let region: &'static Region = Box::leak(Box::new(Region::new(layout)));
        region.view().reset(&input, 0);
        let output = std::env::var_os("DST_OUTPUT").and_then(|path| match File::create(&path) {
            Ok(file) => Some(Mutex::new(file)),
            Err(err) => {
                eprintln!(
                    "dst: cannot write DST_OUTPUT={}: {err}",
                    path.to_string_lossy()
                );
                None
            }
        });
        let local = Local {
            region,
            output,
            trace: env_flag("DST_TRACE"),
            #[cfg(feature = "threads")]
            explicit: explicit_input(),
        };
        if local.output.is_some() {
            local.write_line(&serde_json::json!({
                "type": "run",
                "seed": decision::tail_seed(&input),
                "input_len": input.len(),
            }));
            for site in catalog::all() {
                local.write_line(&assertion_json(site, false, false, None));
            }
        }
        local
    });
    ABORT_ON_FAILURE.store(abort_on_failure(), Ordering::Relaxed);
    let _guard = inner();
    if REGION.load(Ordering::Acquire).is_null() {
        REGION.store(
            std::ptr::from_ref(local.region).cast_mut(),
            Ordering::Release,
        );
        let mode = if local.output.is_some() {
            RECORDING
        } else {
            QUIET
        };
        MODE.store(mode, Ordering::Release);
    }
}

/// Attaches the segment named in `DST_REGION`, if the variable is set, and
/// installs the crash handler for it; returns whether it did. An unusable
/// segment ends the process (`open_from_env`).
fn attach_segment() -> bool {
    let Some(region) = open_from_env() else {
        return false;
    };
    let region: &'static Region = Box::leak(Box::new(region));
    install(region);
    set_whole_process();
    #[cfg(unix)]
    crate::crash::install(region.view());
    true
}

/// Whether local mode's input is chosen by the user (`DST_INPUT`, `DST_SEED`).
#[cfg(feature = "threads")]
fn explicit_input() -> bool {
    std::env::var_os("DST_INPUT").is_some() || std::env::var_os("DST_SEED").is_some()
}

#[cfg(feature = "threads")]
/// The run whose threads are under control, as (region base, run id): when
/// a controller is attached, or local mode replays `DST_INPUT` or
/// `DST_SEED`. A program run plainly (a fresh seed) keeps std's threads.
pub(crate) fn control_key() -> Option<(usize, u64)> {
    if MODE.load(Ordering::Acquire) == UNINIT {
        static WANTED: OnceLock<bool> = OnceLock::new();
        let wanted = *WANTED
            .get_or_init(|| explicit_input() || std::env::var_os(crate::shm::REGION_ENV).is_some());
        if !wanted {
            return None;
        }
        let _ = region();
    }
    let region = current()?;
    if local().is_some_and(|l| !l.explicit) {
        return None;
    }
    Some((
        region.base() as usize,
        region.header().run_id.load(Ordering::Acquire),
    ))
}

#[cfg(feature = "threads")]
/// Counts a contested scheduling point (`Header::contested`).
pub(crate) fn count_contested() {
    if let Some(region) = current() {
        region.header().contested.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(feature = "threads")]
/// Counts an observed pair of conflicting operations (interleaving
/// coverage; see [`RegionRef::count_interleaving`]).
pub(crate) fn count_interleaving(first: u64, second: u64) {
    if let Some(region) = current()
        && protocol::interleaving_coverage()
    {
        region.count_interleaving(first, second);
    }
}

#[cfg(feature = "threads")]
/// Whether scheduling steps are traced now: a run being explained
/// (`FLAG_TRACE_SITES`) or local mode with `DST_TRACE`.
pub(crate) fn tracing_steps() -> bool {
    let Some(region) = current() else {
        return false;
    };
    region.header().flags.load(Ordering::Relaxed) & FLAG_TRACE_SITES != 0
        || local().is_some_and(|l| l.trace)
}

#[cfg(feature = "threads")]
/// Records one scheduling step (callers check [`tracing_steps`] first).
pub(crate) fn step_event(step: region::Step) {
    let region = current_or_init();
    if let Some(local) = local().filter(|l| l.trace) {
        local.write_line(&serde_json::json!({
            "type": "step",
            "step": step.step,
            "thread": step.thread,
            "op": step.op,
            "location": {"file": step.file, "line": step.line, "column": step.column},
            "preempted": step.preempted,
        }));
    }
    inner().recorder(region).step(step);
}

/// The input of a local run: `DST_INPUT`'s bytes, else `DST_SEED`, else a
/// fresh seed printed to stderr.
fn local_input() -> Vec<u8> {
    if let Some(path) = std::env::var_os("DST_INPUT") {
        match std::fs::read(&path) {
            Ok(bytes) => return bytes,
            Err(err) => {
                eprintln!(
                    "dst: cannot read DST_INPUT={}: {err}; running the nominal input instead",
                    path.to_string_lossy()
                );
                return Vec::new();
            }
        }
    }
    if let Ok(text) = std::env::var("DST_SEED") {
        match parse_seed(&text) {
            Some(seed) => return seed.to_le_bytes().to_vec(),
            None => eprintln!("dst: DST_SEED={text:?} is not a u64; choosing a fresh seed"),
        }
    }
    let seed = fresh_seed();
    eprintln!("dst: DST_SEED={seed} (set it to reproduce this run)");
    seed.to_le_bytes().to_vec()
}

fn parse_seed(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// A nonzero seed from the OS-keyed std hasher and the clock: the one
/// nondeterministic choice of local mode, printed so the run can be repeated.
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    if let Ok(now) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(now.as_nanos());
    }
    #[cfg(unix)]
    h.write_u32(std::process::id());
    h.finish().max(1)
}

impl Local {
    fn write_line(&self, value: &serde_json::Value) {
        if let Some(file) = &self.output {
            let mut line = value.to_string();
            line.push('\n');
            let mut file = file.lock().unwrap_or_else(|p| p.into_inner());
            let _ = file.write_all(line.as_bytes());
        }
    }
}

fn local() -> Option<&'static Local> {
    let local = LOCAL.get()?;
    std::ptr::eq(REGION.load(Ordering::Acquire), local.region).then_some(local)
}

fn assertion_json(
    site: &Site,
    condition: bool,
    hit: bool,
    details: Option<&str>,
) -> serde_json::Value {
    let details = details
        .and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .unwrap_or(serde_json::Value::Null);
    serde_json::json!({
        "type": "assertion",
        "kind": site.kind.name(),
        "message": site.message,
        "location": {
            "file": site.file,
            "line": site.line,
            "column": site.column,
            "module": site.module,
        },
        "condition": condition,
        "hit": hit,
        "must_hit": site.kind.must_hit(),
        "details": details,
    })
}

/// Where a decision was taken.
#[derive(Clone, Copy)]
pub(crate) enum DecisionSite<'a> {
    Caller(&'static std::panic::Location<'static>),
    Fault(&'static Site),
    Foreign(crate::protocol::ForeignSite),
    /// Described by whoever took it ([`decide_text`]).
    #[cfg_attr(not(any(feature = "libfuzzer", feature = "sim")), allow(dead_code))]
    Text(SiteText<'a>),
}

impl DecisionSite<'_> {
    fn id(self) -> u32 {
        match self {
            DecisionSite::Caller(loc) => {
                crate::catalog::site_hash(loc.file(), loc.line(), loc.column())
            }
            DecisionSite::Fault(site) => site.id,
            DecisionSite::Foreign(site) => site.id(),
            DecisionSite::Text(site) => site.id,
        }
    }

    /// File, line, column and fault name.
    fn text(&self) -> SiteText<'_> {
        match *self {
            DecisionSite::Caller(loc) => SiteText {
                id: self.id(),
                file: loc.file(),
                line: loc.line(),
                column: loc.column(),
                name: None,
            },
            DecisionSite::Fault(s) => SiteText {
                id: s.id,
                file: s.file,
                line: s.line,
                column: s.column,
                name: Some(s.message),
            },
            DecisionSite::Foreign(s) => SiteText {
                id: s.id(),
                file: s.file(),
                line: s.line(),
                column: 0,
                name: None,
            },
            DecisionSite::Text(s) => s,
        }
    }
}

#[cfg(feature = "libfuzzer")]
/// Takes one decision at a site described by its text (see [`SiteText`]),
/// exactly as the SDK's own `random` functions and `fault!` do.
pub(crate) fn decide_text(
    kind: decision::Kind,
    site: SiteText<'_>,
    bytes: &mut [u8],
    value: Value,
) -> u64 {
    decide(kind, DecisionSite::Text(site), bytes, value)
}

/// Takes one decision: fills `bytes` from the stream, records it, and returns
/// `value.of(bytes)`.
pub(crate) fn decide(
    kind: decision::Kind,
    site: DecisionSite<'_>,
    bytes: &mut [u8],
    value: Value,
) -> u64 {
    #[cfg(target_family = "wasm")]
    if crate::wasm::hosted() {
        return crate::wasm::decide(kind, site.text(), bytes, value);
    }
    let region = current_or_init();
    let mut inner = inner();
    let site_id = match site {
        DecisionSite::Caller(loc) => inner.callers.id(loc),
        _ => site.id(),
    };
    let taken = inner
        .recorder(region)
        .decide(kind, site_id, || site.text(), bytes, value);
    if let Some(local) = local().filter(|l| l.trace) {
        let SiteText {
            file,
            line,
            column,
            name,
            ..
        } = site.text();
        local.write_line(&serde_json::json!({
            "type": "decision",
            "index": taken.index,
            "kind": kind.name(),
            "site": site_id,
            "value": taken.value,
            "offset": taken.offset,
            "width": bytes.len(),
            "location": {"file": file, "line": line, "column": column},
            "name": name,
        }));
    }
    taken.value
}

/// The assertion slow path: records one evaluation of `site`.
///
/// `score` is the guidance score (lower is closer to flipping the property's
/// interesting outcome), NaN when the kind has none. `details` is evaluated at
/// most once per site and polarity per run, and never under a lock.
#[doc(hidden)]
pub fn __assert(
    site: &'static Site,
    condition: bool,
    score: f64,
    details: impl FnOnce() -> Option<String>,
) {
    assert_at(site, site.index(), condition, score, details);
}

/// [`__assert`] for a site whose catalog index the caller knows (registered
/// sites, which cache it).
pub fn assert_at(
    site: &'static Site,
    index: usize,
    condition: bool,
    score: f64,
    details: impl FnOnce() -> Option<String>,
) {
    #[cfg(target_family = "wasm")]
    if crate::wasm::hosted() {
        return crate::wasm::assert(site, condition, score, details);
    }
    let _ = region();
    if MODE.load(Ordering::Relaxed) == QUIET && !site.kind.fails_on(condition) {
        return;
    }
    if evaluate(index, site.kind, condition, score) {
        report(Some(site), index, condition, details());
    }
}

/// The site-table half of an assertion: counts, guidance, first failure.
/// Returns whether [`report`] must follow: a first evaluation of this
/// polarity that someone reads (a failure, a run being explained, local
/// mode).
fn evaluate(index: usize, kind: catalog::Kind, condition: bool, score: f64) -> bool {
    let evaluation = protocol::evaluate(region(), index, kind, condition, score);
    evaluation.report() || (evaluation.first && local().is_some())
}

/// The event half of an assertion: the event, local mode's line on stderr
/// and `DST_OUTPUT` record (for the SDK's own sites), the abort that
/// `DST_ABORT_ON_FAILURE` asks for.
fn report(site: Option<&Site>, index: usize, condition: bool, details: Option<String>) {
    let region = current_or_init();
    let failed = site.is_some_and(|s| s.kind.fails_on(condition));
    let local = local();
    if let (Some(site), true, Some(_)) = (site, failed, local) {
        eprintln!(
            "dst: assertion failed: {} \"{}\" at {}:{}:{}{}{}",
            site.kind.name(),
            site.message,
            site.file,
            site.line,
            site.column,
            if details.is_some() { " details=" } else { "" },
            details.as_deref().unwrap_or(""),
        );
    }
    inner()
        .recorder(region)
        .report(index, condition, details.clone());
    if let (Some(local), Some(site)) = (local, site) {
        local.write_line(&assertion_json(site, condition, true, details.as_deref()));
    }
    if failed && ABORT_ON_FAILURE.load(Ordering::Relaxed) {
        eprintln!("dst: DST_ABORT_ON_FAILURE is set: aborting");
        std::process::abort();
    }
}

/// Whether lifecycle events are recorded now: always in local mode; under a
/// controller when it asks (`FLAG_EVENTS`, or `FLAG_TRACE_SITES` to explain
/// a run). Lets callers skip preparing details nobody reads.
pub fn events_wanted() -> bool {
    #[cfg(target_family = "wasm")]
    if crate::wasm::hosted() {
        return crate::wasm::events_wanted();
    }
    let region = region();
    local().is_some()
        || region.header().flags.load(Ordering::Relaxed) & (region::FLAG_EVENTS | FLAG_TRACE_SITES)
            != 0
}

/// Records a lifecycle event (callers check [`events_wanted`] first, before
/// preparing the details).
pub fn event(name: &str, details: Option<String>) {
    #[cfg(target_family = "wasm")]
    if crate::wasm::hosted() {
        return crate::wasm::event(name, details);
    }
    let region = current_or_init();
    inner().recorder(region).event(name, details.clone());
    if let Some(local) = local() {
        let details = details
            .and_then(|d| serde_json::from_str::<serde_json::Value>(&d).ok())
            .unwrap_or(serde_json::Value::Null);
        local.write_line(&serde_json::json!({
            "type": "event",
            "name": name,
            "details": details,
        }));
    }
}

/// Serializes details to JSON text; a value that cannot be serialized is
/// reported in place of the details rather than failing the program.
#[doc(hidden)]
pub fn __details<T: serde::Serialize + ?Sized>(details: &T) -> Option<String> {
    Some(serde_json::to_string(details).unwrap_or_else(|err| {
        serde_json::json!({ "dst_error": format!("details could not be serialized: {err}") })
            .to_string()
    }))
}

/// A fault point: one decision byte; records the outcome on the fault's site.
#[doc(hidden)]
pub fn __fault(site: &'static Site) -> bool {
    fault_at(site, None)
}

/// [`__fault`] for a site whose catalog index the caller knows.
#[doc(hidden)]
pub fn __fault_at(site: &'static Site, index: usize) -> bool {
    fault_at(site, Some(index))
}

/// A fault point at `site`, whose catalog index is looked up (only when an
/// evaluation is recorded) if not given.
fn fault_at(site: &'static Site, index: Option<usize>) -> bool {
    let mut byte = [0u8; 1];
    let fired = decide(
        decision::Kind::Fault,
        DecisionSite::Fault(site),
        &mut byte,
        Value::FAULT,
    ) != 0;
    if !__quiet() {
        let index = index.unwrap_or_else(|| site.index());
        assert_at(site, index, fired, f64::NAN, || None);
    }
    fired
}

/// Default details of a numeric assertion: its two sides.
#[doc(hidden)]
pub fn __cmp_details(left: f64, right: f64) -> Option<String> {
    Some(serde_json::json!({ "left": left, "right": right }).to_string())
}

#[cfg(unix)]
fn fail(name: &str, why: impl std::fmt::Display) -> ! {
    eprintln!("dst: {}={name}: {why}", crate::shm::REGION_ENV);
    std::process::exit(crate::shm::EXIT_BAD_REGION);
}

/// The segment named in `DST_REGION`, mapped and validated; `None` when the
/// variable is not set. Exits the process if the segment is unusable.
#[cfg(unix)]
fn open_from_env() -> Option<Region> {
    let name = std::env::var(crate::shm::REGION_ENV).ok()?;
    let Ok(cname) = std::ffi::CString::new(name.as_str()) else {
        fail(&name, "the name contains a NUL byte");
    };
    match Region::open_segment(&cname) {
        Ok(region) => Some(region),
        Err(why) => fail(&name, why),
    }
}

/// No shared memory where there are no processes to share it with (a wasm
/// module reaches its explorer through [`crate::wasm`] instead).
#[cfg(not(unix))]
fn open_from_env() -> Option<Region> {
    None
}

#[cfg(test)]
mod tests {
    use std::panic::Location;

    use super::*;

    #[test]
    fn a_callers_id_is_its_sites_hash_also_after_another_took_its_slot() {
        let mut ids = CallerIds([(0, 0); CALLER_IDS]);
        let (a, b) = (Location::caller(), Location::caller());
        let hash = |l: &Location| crate::catalog::site_hash(l.file(), l.line(), l.column());
        assert_eq!(ids.id(a), hash(a));
        assert_eq!(ids.id(a), hash(a), "from the cache");
        assert_eq!(ids.id(b), hash(b));
        assert_ne!(hash(a), hash(b));
        // `b` in `a`'s slot (as a caller at a colliding address would be).
        let key = |l: &'static Location<'static>| std::ptr::from_ref(l) as usize;
        ids.0[CallerIds::slot(key(a))] = (key(b), hash(b));
        assert_eq!(ids.id(a), hash(a));
    }
}
