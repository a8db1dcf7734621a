//! The region's layout, as every level lays it out (`#[repr(C)]`, all
//! offsets relative to its start), and [`Writer`]: the writes of one run
//! into a region's memory. `dst::region` documents the sections and owns
//! regions; this module is what a run writes, wherever it runs.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::kind::Kind;

/// `b"DSTREGN\0"` read as a little-endian `u64`.
pub const MAGIC: u64 = u64::from_le_bytes(*b"DSTREGN\0");
/// Layout version; bumped on any change to the structs in this module or
/// to how a region is held (4: a segment is `dst::region::segment_size` long).
pub const VERSION: u32 = 4;

/// Header flag: the SDK also logs each decision's source location as an
/// `Event::DecisionSite` (used by `replay` to explain a run).
pub const FLAG_TRACE_SITES: u64 = 1;
/// Header flag: the SDK records lifecycle events (`Event::Lifecycle`).
/// Without it (the explorer's fast path) they are skipped, as nothing reads
/// them; `FLAG_TRACE_SITES` implies it.
pub const FLAG_EVENTS: u64 = 2;
/// Header flag: log this run's comparisons (`dst::cmplog`), for the
/// explorer's input-to-state stage. The in-process executor attaches its
/// log only for such runs: a logged comparison costs an entry.
pub const FLAG_CMPLOG: u64 = 4;

/// Status bit: an assertion site's catalog index did not fit `sites_capacity`.
pub const STATUS_SITES_OVERFLOW: u64 = 1;
/// Status bit: an event did not fit the event log and was dropped.
pub const STATUS_EVENTS_OVERFLOW: u64 = 2;
/// Status bit: the input was longer than `input_capacity` and was truncated.
pub const STATUS_INPUT_TRUNCATED: u64 = 4;
/// Status bit: the run used controlled threads or synchronization, so the
/// SDK's own properties (`dst::catalog::BUILTIN`) watched it.
pub const STATUS_CONTROLLED: u64 = 8;

/// The region's header, at offset 0.
///
/// The first block (magic to `events_capacity`) is written once when the
/// region is created. `run_id`, `input_len` and `flags` are written by the
/// controller before each run; the remaining fields are written by the SDK
/// during the run and read by the controller after it.
#[repr(C)]
#[derive(Debug)]
pub struct Header {
    pub magic: u64,
    pub version: u32,
    /// `size_of::<Header>()`, so a reader can reject a different layout.
    pub header_size: u32,
    /// Size of the whole region in bytes.
    pub total_size: u64,
    pub input_offset: u64,
    pub input_capacity: u64,
    pub coverage_offset: u64,
    pub coverage_size: u64,
    pub sites_offset: u64,
    pub sites_capacity: u64,
    pub decisions_offset: u64,
    pub decisions_capacity: u64,
    pub events_offset: u64,
    pub events_capacity: u64,

    /// Incremented by the controller for every run; the SDK restarts its
    /// decision stream when it sees a new value.
    pub run_id: AtomicU64,
    /// Bytes of the input used in this run (at most `input_capacity`).
    pub input_len: AtomicU64,
    /// `FLAG_*` bits set by the controller.
    pub flags: AtomicU64,

    /// Decision-stream bytes consumed so far (explicit and tail).
    pub cursor: AtomicU64,
    /// Decisions taken so far (may exceed `decisions_capacity`).
    pub decisions: AtomicU64,
    /// Running hash over every decision's (kind, site, value).
    pub trace_hash: AtomicU64,
    /// Bytes written to the event log.
    pub events_len: AtomicU64,
    /// Catalog index + 1 of the first failing must-hold assertion; 0 if none.
    pub first_failure: AtomicU64,
    /// `STATUS_*` bits set by the SDK.
    pub status: AtomicU64,

    /// Written by the SDK's crash handler in a target process: the signal
    /// that killed the run (0 if none), the faulting address it reported,
    /// and the stack from the faulting pc outwards (return addresses after
    /// the first), `crash_depth` frames of them.
    pub crash_signal: AtomicU64,
    pub crash_address: AtomicU64,
    pub crash_depth: AtomicU64,
    pub crash_frames: [AtomicU64; CRASH_FRAMES],
    /// Contested scheduling points of this run so far (where more than one
    /// thread could run): what PCT's expected length is fitted to.
    pub contested: AtomicU64,
    /// The stack pointer when the crash handler's signal came (a fault just
    /// below it is a stack overflow).
    pub crash_sp: AtomicU64,
    /// Persistent mode's hand-over (futex words, kept across runs; see
    /// `forkserver.rs`): the executor posts run `n` in `go`, a persistent
    /// child sets `done` to `n` when it finished it; the fork server sets
    /// [`DONE_EXITED`] in `done` when the child is gone (its wait status is
    /// on the server's pipe).
    pub go: AtomicU32,
    pub done: AtomicU32,
    /// The fork server's last child and the raw wait status it ended with
    /// (valid once `done` has [`DONE_EXITED`]).
    pub pid: AtomicU32,
    pub wait_status: AtomicU32,
}

/// In [`Header::done`]: the run's process ended (exited, crashed, killed).
pub const DONE_EXITED: u32 = 1 << 31;

/// Bytes at the start of the coverage map that decision coverage uses.
pub const DECISION_WINDOW: u64 = 4096;

/// Slots of the decision window that count decisions; the last quarter
/// counts interleavings ([`Writer::count_interleaving`]).
fn decision_slots(coverage_size: u64) -> u64 {
    let window = coverage_size.min(DECISION_WINDOW);
    if window < 4 {
        window
    } else {
        window - window / 4
    }
}

/// Frames of a crashing stack kept in the header.
pub const CRASH_FRAMES: usize = 16;

/// Per-run state of one assertion site, indexed by the site's catalog index.
#[repr(C)]
#[derive(Debug, Default)]
pub struct SiteState {
    /// `SITE_*` bits.
    pub flags: AtomicU32,
    pub _reserved: u32,
    /// Times the site was evaluated (reached).
    pub evaluations: AtomicU64,
    /// Times its condition was true (for reachable and unreachable: reached).
    pub true_count: AtomicU64,
    /// `f64` bits of the best guidance score seen: lower is closer to making
    /// a `sometimes` true or an `always` false. `+inf` when none was recorded.
    pub guidance: AtomicU64,
}

/// The site was reached in this run.
pub const SITE_HIT: u32 = 1;
/// Its condition was true at least once in this run.
pub const SITE_TRUE: u32 = 2;
/// Its condition was false at least once in this run.
pub const SITE_FALSE: u32 = 4;

/// One decision, as the SDK took it.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DecisionRecord {
    /// Offset of its first byte in the decision stream (explicit bytes, then tail).
    pub offset: u64,
    /// The decoded value (for `fill`, a hash of the bytes).
    pub value: u64,
    /// Site id: a stable hash of the call site (see `dst::catalog::site_hash`).
    pub site: u32,
    /// Bytes consumed.
    pub width: u16,
    /// A `crate::decision::Kind` as `u8`.
    pub kind: u8,
    pub _reserved: u8,
}

/// Initial value of `Header::trace_hash`.
pub const TRACE_HASH_INIT: u64 = crate::hash::FNV64_OFFSET;

/// Folds one decision into a trace hash.
pub fn trace_hash_step(hash: u64, kind: u8, site: u32, value: u64) -> u64 {
    let mut h = hash;
    for word in [u64::from(kind) << 32 | u64::from(site), value] {
        h = (h ^ word).wrapping_mul(crate::hash::FNV64_PRIME);
        h ^= h >> 29;
    }
    h
}

/// A region's layout as validated: every section's offset and size, copied
/// out of the header once. Views read these and never the header's layout
/// fields again, so a target that writes over the header cannot move a
/// section under the SDK or under the controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sections {
    pub total_size: usize,
    pub input_offset: usize,
    pub input_capacity: usize,
    pub coverage_offset: usize,
    pub coverage_size: usize,
    pub sites_offset: usize,
    pub sites_capacity: usize,
    pub decisions_offset: usize,
    pub decisions_capacity: usize,
    pub events_offset: usize,
    pub events_capacity: usize,
}

/// The writes of one run into a region's memory: a view of a region
/// whose sections were validated (or, in a guest, laid out by the
/// executor that owns it). Cheap to copy.
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    base: *mut u8,
    sections: &'a Sections,
}

// SAFETY: a `Writer` hands out shared references to atomics, and writes
// byte ranges (decision records, coverage counters) that the protocol
// gives to one writer per run at a time, so sharing it across threads is
// sound.
unsafe impl Send for Writer<'_> {}
// SAFETY: as above.
unsafe impl Sync for Writer<'_> {}

/// What evaluating an assertion did to its site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evaluation {
    /// The first evaluation of this polarity in the run.
    pub first: bool,
    /// The evaluation fails its property (a must-hold one was false).
    pub failed: bool,
    /// The run is being explained (`FLAG_TRACE_SITES`).
    pub explaining: bool,
    /// The site is outside the region's table (`STATUS_SITES_OVERFLOW`).
    pub overflow: bool,
}

impl Evaluation {
    /// Whether its report (event, details) is wanted by an explorer: a
    /// first failure, or a first evaluation of a run being explained.
    pub fn report(self) -> bool {
        self.first && (self.failed || self.explaining)
    }
}

impl<'a> Writer<'a> {
    /// The region at `base`, laid out as `sections` says.
    ///
    /// # Safety
    /// `base` must point at a region (8-aligned, starting with a
    /// [`Header`]) valid for reads and writes for `'a`, every section of
    /// `sections` inside it.
    #[inline]
    pub unsafe fn new(base: *mut u8, sections: &'a Sections) -> Writer<'a> {
        debug_assert!(
            (base as usize).is_multiple_of(align_of::<Header>()),
            "a region is 8-aligned"
        );
        debug_assert!(
            sections.coverage_offset + sections.coverage_size <= sections.total_size
                && sections.sites_offset + sections.sites_capacity * size_of::<SiteState>()
                    <= sections.total_size
                && sections.decisions_offset
                    + sections.decisions_capacity * size_of::<DecisionRecord>()
                    <= sections.total_size,
            "sections inside the region"
        );
        Writer { base, sections }
    }

    /// The header: its per-run fields (the layout fields may have been
    /// written over by a target: read the sections instead).
    #[inline]
    pub fn header(&self) -> &'a Header {
        // SAFETY: the region's memory starts with a header, 8-aligned, valid
        // for `'a` (`new`'s contract); every bit pattern is a valid `Header`.
        unsafe { &*(self.base as *const Header) }
    }

    #[inline]
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    #[inline]
    pub fn sections(&self) -> &'a Sections {
        self.sections
    }

    /// The state of site `index`, if it fits the table.
    #[inline]
    pub fn site(&self, index: usize) -> Option<&'a SiteState> {
        let s = self.sections;
        if index < s.sites_capacity {
            // SAFETY: index is below the capacity of a section inside the
            // region (`new`'s contract); the section is 8-aligned and
            // `SiteState` has alignment 8; all bit patterns are valid.
            Some(unsafe { &*(self.base.add(s.sites_offset) as *const SiteState).add(index) })
        } else {
            None
        }
    }

    /// Writes decision record `index` if it fits.
    #[inline]
    pub fn put_decision(&self, index: u64, record: DecisionRecord) {
        let s = self.sections;
        if index < s.decisions_capacity as u64 {
            // SAFETY: index is below the section's capacity; the run's one
            // writer writes each index once per run.
            unsafe {
                let slot =
                    (self.base.add(s.decisions_offset) as *mut DecisionRecord).add(index as usize);
                slot.write(record);
            }
        }
    }

    /// Adds one to coverage counter `slot` (wrapping).
    #[inline]
    fn bump(&self, slot: usize) {
        let s = self.sections;
        debug_assert!(slot < s.coverage_size, "counter {slot} outside the map");
        // SAFETY: `slot < coverage_size` (every caller reduces it modulo a
        // window no larger than the map), inside the section.
        unsafe {
            let counter = self.base.add(s.coverage_offset + slot);
            counter.write(counter.read().wrapping_add(1));
        }
    }

    /// Counts decision (site, value) in the coverage map, so that a new
    /// value at a decision site is new coverage ("decision coverage"). Small
    /// values count exactly; larger ones by magnitude (bit length).
    #[inline]
    pub fn count_decision(&self, site: u32, value: u64) {
        let size = self.sections.coverage_size as u64;
        if size == 0 {
            return;
        }
        let bucket = if value < 16 {
            value
        } else {
            16 + u64::from(64 - value.leading_zeros())
        };
        // Kept to the map's first page: a forked run then touches one page
        // of the map for its decisions, not one per decision, and densely
        // numbered edges (trace-pc-guard) follow it.
        let window = decision_slots(size);
        let slot = (u64::from(site) ^ bucket.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % window;
        self.bump(slot as usize);
    }

    /// Counts a pair of conflicting operations in the order a controlled
    /// run observed them (a read and the write it read from, a lock
    /// acquisition and the release before it), so that a new interleaving is
    /// new coverage. The pairs have their own quarter of the decision window.
    #[inline]
    pub fn count_interleaving(&self, first: u64, second: u64) {
        let size = self.sections.coverage_size as u64;
        let window = size.min(DECISION_WINDOW);
        let slots = window - decision_slots(size);
        if slots == 0 {
            return;
        }
        let hash = (first.rotate_left(17) ^ second).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        let slot = decision_slots(size) + hash % slots;
        debug_assert!(slot < window);
        self.bump(slot as usize);
    }

    /// Records one decision taken at stream `offset`, `width` bytes, of
    /// `kind` (a `dst::decision::Kind` as `u8`) at `site`, worth `value`:
    /// its record (if it fits), the decision count, decision coverage and
    /// the trace hash. Returns its index. The run's one writer calls it
    /// after it advanced the cursor.
    pub fn record(&self, kind: u8, site: u32, offset: u64, width: usize, value: u64) -> u64 {
        let header = self.header();
        let index = header.decisions.load(Ordering::Relaxed);
        debug_assert!(index < u64::MAX / 2, "decision counter corrupt: {index}");
        debug_assert!(
            offset + width as u64 <= header.cursor.load(Ordering::Relaxed),
            "a decision is recorded after its bytes are taken"
        );
        self.put_decision(
            index,
            DecisionRecord {
                offset,
                value,
                site,
                width: width.min(u16::MAX as usize) as u16,
                kind,
                _reserved: 0,
            },
        );
        header.decisions.store(index + 1, Ordering::Release);
        self.count_decision(site, value);
        let hash = header.trace_hash.load(Ordering::Relaxed);
        header
            .trace_hash
            .store(trace_hash_step(hash, kind, site, value), Ordering::Release);
        index
    }

    /// The site-table half of an assertion: counts, guidance (`score`, NaN
    /// for none), the run's first failure. Atomic, so any thread may
    /// evaluate at any time.
    pub fn evaluate(&self, index: usize, kind: Kind, condition: bool, score: f64) -> Evaluation {
        let header = self.header();
        let explaining = header.flags.load(Ordering::Relaxed) & FLAG_TRACE_SITES != 0;
        let failed = kind.fails_on(condition);
        let Some(state) = self.site(index) else {
            header
                .status
                .fetch_or(STATUS_SITES_OVERFLOW, Ordering::Relaxed);
            return Evaluation {
                first: false,
                failed,
                explaining,
                overflow: true,
            };
        };
        state.evaluations.fetch_add(1, Ordering::Relaxed);
        let polarity = if condition {
            state.true_count.fetch_add(1, Ordering::Relaxed);
            SITE_TRUE
        } else {
            SITE_FALSE
        };
        let previous = state.flags.fetch_or(SITE_HIT | polarity, Ordering::AcqRel);
        if !score.is_nan() {
            let mut best = state.guidance.load(Ordering::Relaxed);
            while score < f64::from_bits(best) {
                match state.guidance.compare_exchange_weak(
                    best,
                    score.to_bits(),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(now) => best = now,
                }
            }
        }
        if failed {
            let _ = header.first_failure.compare_exchange(
                0,
                index as u64 + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
        debug_assert!(
            state.flags.load(Ordering::Relaxed) & SITE_HIT != 0,
            "an evaluated site is hit"
        );
        Evaluation {
            first: previous & polarity == 0,
            failed,
            explaining,
            overflow: false,
        }
    }
}
