//! The run protocol: how one run is written into a region, as a value its
//! owner holds.
//!
//! A [`Recorder`] is a region (any handle that derefs to a [`Region`]) and
//! the decision stream of the run the region holds. Everything that writes
//! a run goes through it: taking a decision from the stream (its record,
//! decision coverage, cursor and trace hash), evaluating an assertion into
//! its site state, appending events, counting interleavings, and tracing
//! scheduling steps. There is no global here: the native SDK holds one
//! recorder for the region it attached (`runtime`, which adds local mode's
//! output and the process-wide lock its threads share), and each guest
//! executor (wasm, the emulator, KVM) holds one for its own region and
//! answers its guest through it, so executors of any level can run at once
//! in one process. Sites not in the catalog are described here too:
//! [`SiteText`] (by text) and [`ForeignSite`] (a C or C++ call site).
//!
//! Life cycle: the region's owner resets it between runs
//! ([`RegionRef::reset`], which moves its run id on); the first decision
//! of a run sees the new run id and starts the stream from the input's
//! seed. Writes during a run need `&mut Recorder` (one writer at a time);
//! evaluating an assertion is atomic on the region and needs only `&self`.

use std::ops::Deref;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use crate::catalog;
use crate::decision::{self, Kind, Stream, Value};
use crate::region::{self, Event, FLAG_EVENTS, FLAG_TRACE_SITES, Region, RegionRef};

/// A decision site in C or C++ code (libdst's `dst_random_*`, whose macros
/// pass `__FILE__` and `__LINE__`), so that decisions there are told apart
/// and named by their source line, as `#[track_caller]` does in Rust.
#[derive(Clone, Copy, Debug)]
pub struct ForeignSite {
    file: *const std::ffi::c_char,
    line: u32,
    id: u32,
}

// SAFETY: `file` points at a static, immutable string (`new`'s contract).
unsafe impl Send for ForeignSite {}
// SAFETY: as above.
unsafe impl Sync for ForeignSite {}

impl ForeignSite {
    /// A site at `file:line` with `id` (see [`ForeignSite::id_of`]).
    ///
    /// # Safety
    /// `file` must be a NUL-terminated string that lives and stays unchanged
    /// for the rest of the process (a `__FILE__` literal).
    pub unsafe fn new(file: *const std::ffi::c_char, line: u32, id: u32) -> ForeignSite {
        ForeignSite { file, line, id }
    }

    /// The id of the site at `file:line` (as the catalog hashes locations).
    ///
    /// # Safety
    /// As for [`ForeignSite::new`].
    pub unsafe fn id_of(file: *const std::ffi::c_char, line: u32) -> u32 {
        // SAFETY: the caller's contract.
        let file = unsafe { std::ffi::CStr::from_ptr(file) }.to_string_lossy();
        crate::catalog::site_hash(&file, line, 0)
    }

    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    pub(crate) fn line(&self) -> u32 {
        self.line
    }

    /// The file name (read only when a run is traced).
    pub(crate) fn file(&self) -> &'static str {
        if self.file.is_null() {
            return "";
        }
        // SAFETY: `new`'s contract: a static NUL-terminated string.
        unsafe { std::ffi::CStr::from_ptr(self.file) }
            .to_str()
            .unwrap_or("?")
    }
}

/// A decision site described by its text: what a decision record's site id
/// hashes, and what a run being explained shows for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiteText<'a> {
    /// The site's id (`catalog::site_hash` of its location, as the SDK
    /// computes it for its own sites).
    pub id: u32,
    pub file: &'a str,
    pub line: u32,
    pub column: u32,
    /// A fault's name.
    pub name: Option<&'a str>,
}

impl<'a> SiteText<'a> {
    /// A site named by `name` alone (an executor's own decision: its
    /// clock, its scheduler), its id the name's `catalog::site_hash`.
    pub fn named(name: &'a str) -> SiteText<'a> {
        SiteText {
            id: catalog::site_hash(name, 0, 0),
            file: name,
            line: 0,
            column: 0,
            name: None,
        }
    }
}

/// One decision as it was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    /// Its index in the run's decision records.
    pub index: u64,
    /// Where its bytes start in the decision stream.
    pub offset: u64,
    /// Its value (`Value::of` its bytes).
    pub value: u64,
}

pub use crate::region::Evaluation;

/// Writes runs into a region; see the module docs.
pub struct Recorder<R> {
    region: R,
    stream: Option<Stream>,
    /// The run id `stream` belongs to.
    run: u64,
}

impl<R: Deref<Target = Region>> std::fmt::Debug for Recorder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("region", &self.view().base())
            .field("run", &self.run)
            .finish_non_exhaustive()
    }
}

impl<R: Clone> Clone for Recorder<R> {
    fn clone(&self) -> Self {
        Recorder {
            region: self.region.clone(),
            stream: self.stream.clone(),
            run: self.run,
        }
    }
}

impl<R: Deref<Target = Region>> Recorder<R> {
    /// A recorder for `region`, whose next run starts a fresh stream.
    pub fn new(region: R) -> Recorder<R> {
        Recorder {
            region,
            stream: None,
            run: 0,
        }
    }

    /// The region's handle.
    pub fn handle(&self) -> &R {
        &self.region
    }

    /// A view of the region.
    #[inline]
    pub fn view(&self) -> RegionRef<'_> {
        self.region.view()
    }

    /// The run's flags (`FLAG_*`).
    #[inline]
    pub fn flags(&self) -> u64 {
        self.view().header().flags.load(Ordering::Relaxed)
    }

    /// Takes one decision at `site` (its id; its text only asked for when
    /// the run is being explained): fills `bytes` from the stream, records
    /// it, and returns it with its value `value.of(bytes)`.
    pub fn decide<'t>(
        &mut self,
        kind: Kind,
        site: u32,
        text: impl FnOnce() -> SiteText<'t>,
        bytes: &mut [u8],
        value: Value,
    ) -> Taken {
        let region = self.region.view();
        let header = region.header();
        let run = header.run_id.load(Ordering::Acquire);
        if self.run != run || self.stream.is_none() {
            self.run = run;
            self.stream = Some(Stream::new(decision::tail_seed(region.input())));
        }
        let stream = self.stream.as_mut().expect("set above");
        // A guest that takes decisions itself from the stream's bytes (the
        // KVM executor's runtime) advances the region's cursor, not this
        // stream's: catch up by reading what it consumed (so the tail
        // generator advances as it would have). Natively the two are equal.
        let ahead = header.cursor.load(Ordering::Acquire);
        if ahead > stream.cursor {
            debug_assert!(
                ahead - stream.cursor < 1 << 32,
                "a guest cursor out of range"
            );
            let mut skipped = [0u8; 256];
            while stream.cursor < ahead {
                let n = (ahead - stream.cursor).min(skipped.len() as u64) as usize;
                stream.read(region.input(), &mut skipped[..n]);
            }
        }
        let offset = stream.cursor;
        stream.read(region.input(), bytes);
        debug_assert_eq!(
            stream.cursor,
            offset + bytes.len() as u64,
            "a decision consumes exactly its width"
        );
        header.cursor.store(stream.cursor, Ordering::Release);
        let value = value.of(bytes);
        let index = region
            .writer()
            .record(kind as u8, site, offset, bytes.len(), value);
        if header.flags.load(Ordering::Relaxed) & FLAG_TRACE_SITES != 0 {
            let text = text();
            debug_assert_eq!(text.id, site, "a site's text names its own id");
            region.push_event(&Event::DecisionSite {
                index,
                file: text.file.to_string(),
                line: text.line,
                column: text.column,
                name: text.name.map(str::to_string),
            });
        }
        Taken {
            index,
            offset,
            value,
        }
    }

    /// [`Recorder::decide`] at a site described by its text; its value.
    pub fn decide_at(
        &mut self,
        kind: Kind,
        site: SiteText<'_>,
        bytes: &mut [u8],
        value: Value,
    ) -> u64 {
        self.decide(kind, site.id, || site, bytes, value).value
    }

    /// Records one evaluation of the site at catalog `index` (of `kind`).
    pub fn evaluate(
        &self,
        index: usize,
        kind: catalog::Kind,
        condition: bool,
        score: f64,
    ) -> Evaluation {
        evaluate(self.view(), index, kind, condition, score)
    }

    /// Appends the report of an evaluation (`Evaluation::report`): its
    /// event, with details.
    pub fn report(&mut self, index: usize, condition: bool, details: Option<String>) {
        debug_assert!(index <= u32::MAX as usize, "a catalog index fits a u32");
        self.view().push_event(&Event::Assertion {
            site: index as u32,
            condition,
            details,
        });
    }

    /// Whether lifecycle events are recorded in this run (`FLAG_EVENTS`,
    /// or `FLAG_TRACE_SITES` to explain it).
    pub fn events_wanted(&self) -> bool {
        self.flags() & (FLAG_EVENTS | FLAG_TRACE_SITES) != 0
    }

    /// Appends a lifecycle event.
    pub fn event(&mut self, name: &str, details: Option<String>) {
        self.view().push_event(&Event::Lifecycle {
            name: name.to_string(),
            details,
        });
    }

    /// Whether scheduling steps are traced in this run (`FLAG_TRACE_SITES`).
    pub fn tracing_steps(&self) -> bool {
        self.flags() & FLAG_TRACE_SITES != 0
    }

    /// Appends a scheduling step (callers check [`Recorder::tracing_steps`]).
    pub fn step(&mut self, step: region::Step) {
        self.view().push_event(&Event::Step(step));
    }

    /// Counts an observed pair of conflicting operations (interleaving
    /// coverage, [`RegionRef::count_interleaving`]).
    pub fn count_interleaving(&self, first: u64, second: u64) {
        if interleaving_coverage() {
            self.view().count_interleaving(first, second);
        }
    }
}

/// Whether interleaving coverage is counted: `DST_INTERLEAVING=off` turns
/// it off, for experiments (the benchmark's ablation).
pub fn interleaving_coverage() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("DST_INTERLEAVING").is_none_or(|v| v != "off"))
}

/// The site-table half of an assertion on `region`: counts, guidance, the
/// run's first failure ([`crate::region::Writer::evaluate`]). Atomic, so
/// any thread may evaluate at any time.
pub fn evaluate(
    region: RegionRef<'_>,
    index: usize,
    kind: catalog::Kind,
    condition: bool,
    score: f64,
) -> Evaluation {
    region.writer().evaluate(index, kind, condition, score)
}
