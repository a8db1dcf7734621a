//! The region: one block of memory, with a fixed, versioned `#[repr(C)]`
//! layout, through which a target and its controller talk.
//!
//! The controller (the explorer's executor, or the SDK itself in local mode)
//! writes the input and resets the per-run fields; the SDK inside the target
//! reads decisions from the input and writes outcomes (assertion state,
//! guidance, the decision trace, events). Every level uses the same layout: the
//! region lives in the explorer's memory for in-process runs, in a shared
//! memory segment for separate processes, and is reached through imports or
//! hypercalls by wasm, emulated and KVM guests. All offsets are relative to the
//! region's start, so the layout never contains a pointer.
//!
//! ```text
//! offset 0        Header          (size_of::<Header>() bytes, 8-aligned)
//! input_offset    input bytes     (input_capacity bytes; input_len used)
//! coverage_offset coverage map    (coverage_size one-byte counters)
//! sites_offset    SiteState[]     (sites_capacity entries, indexed by catalog index)
//! decisions_off.  DecisionRecord[](decisions_capacity entries, in decision order)
//! events_offset   event log       (events_capacity bytes of length-prefixed postcard `Event`s)
//! ```
//!
//! Every header field is validated by [`validate`] before anything is written:
//! a wrong magic, version or size is a [`RegionError`], never an out-of-bounds
//! write. The validated layout ([`Sections`]) is kept outside the region, so
//! a target that later writes over the header cannot move a section.
//!
//! A named shared-memory segment holding a region ([`Region::create_segment`])
//! is [`segment_size`] long: the region in whole pages, then one spare page
//! nothing touches (a fork server guards it, so that its children inherit
//! the region's page tables).
//!
//! A [`Region`] owns region memory, whatever backs it (this process's heap,
//! an anonymous shared mapping for forked children, a named shared-memory
//! segment for another process, or memory a controller lent); every access
//! goes through a [`RegionRef`] view borrowed from it, which the compiler
//! keeps from outliving it.

#[cfg(unix)]
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

pub use dst_core::region::Evaluation;
pub use dst_core::region::{
    CRASH_FRAMES, DECISION_WINDOW, DONE_EXITED, DecisionRecord, FLAG_CMPLOG, FLAG_EVENTS,
    FLAG_TRACE_SITES, Header, MAGIC, SITE_FALSE, SITE_HIT, SITE_TRUE, STATUS_CONTROLLED,
    STATUS_EVENTS_OVERFLOW, STATUS_INPUT_TRUNCATED, STATUS_SITES_OVERFLOW, Sections, SiteState,
    TRACE_HASH_INIT, VERSION, Writer, trace_hash_step,
};

/// A variable-size record in the event log (postcard-encoded, prefixed with
/// its length as a little-endian `u32`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// First true or first false evaluation of a site in this run.
    Assertion {
        site: u32,
        condition: bool,
        /// Details as a JSON text.
        details: Option<String>,
    },
    /// `dst::lifecycle::setup_complete` (name `setup_complete`) or `send_event`.
    Lifecycle {
        name: String,
        details: Option<String>,
    },
    /// The source location of decision `index` (only with `FLAG_TRACE_SITES`).
    DecisionSite {
        index: u64,
        file: String,
        line: u32,
        column: u32,
        name: Option<String>,
    },
    /// The target panicked (written by a controller that runs it in a child
    /// process, so the parent learns the message).
    Panic {
        message: String,
        location: Option<String>,
    },
    /// One step of a controlled schedule (only with `FLAG_TRACE_SITES`).
    Step(Step),
}

/// One scheduling step of a controlled run: which thread runs next, the
/// operation it is about to do, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub step: u64,
    pub thread: u32,
    pub op: String,
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// The thread this step took over from while it could still run (a
    /// preemption), if any.
    pub preempted: Option<u32>,
}

/// Sizes of a region's sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub input_capacity: usize,
    pub coverage_size: usize,
    pub sites_capacity: usize,
    pub decisions_capacity: usize,
    pub events_capacity: usize,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            input_capacity: 1 << 20,
            coverage_size: 1 << 16,
            sites_capacity: 4096,
            decisions_capacity: 1 << 16,
            events_capacity: 1 << 18,
        }
    }
}

fn align8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

impl Layout {
    /// The header this layout produces, with per-run fields zeroed.
    pub fn header(&self) -> Header {
        let mut at = align8(size_of::<Header>());
        let mut section = |bytes: usize| {
            let offset = at;
            at = align8(at + bytes);
            offset as u64
        };
        let input_offset = section(self.input_capacity);
        let coverage_offset = section(self.coverage_size);
        let sites_offset = section(self.sites_capacity * size_of::<SiteState>());
        let decisions_offset = section(self.decisions_capacity * size_of::<DecisionRecord>());
        let events_offset = section(self.events_capacity);
        Header {
            magic: MAGIC,
            version: VERSION,
            header_size: size_of::<Header>() as u32,
            total_size: at as u64,
            input_offset,
            input_capacity: self.input_capacity as u64,
            coverage_offset,
            coverage_size: self.coverage_size as u64,
            sites_offset,
            sites_capacity: self.sites_capacity as u64,
            decisions_offset,
            decisions_capacity: self.decisions_capacity as u64,
            events_offset,
            events_capacity: self.events_capacity as u64,
            run_id: AtomicU64::new(0),
            input_len: AtomicU64::new(0),
            flags: AtomicU64::new(0),
            cursor: AtomicU64::new(0),
            decisions: AtomicU64::new(0),
            trace_hash: AtomicU64::new(TRACE_HASH_INIT),
            events_len: AtomicU64::new(0),
            first_failure: AtomicU64::new(0),
            status: AtomicU64::new(0),
            crash_signal: AtomicU64::new(0),
            crash_address: AtomicU64::new(0),
            crash_depth: AtomicU64::new(0),
            crash_frames: [const { AtomicU64::new(0) }; CRASH_FRAMES],
            contested: AtomicU64::new(0),
            crash_sp: AtomicU64::new(0),
            go: AtomicU32::new(0),
            done: AtomicU32::new(0),
            pid: AtomicU32::new(0),
            wait_status: AtomicU32::new(0),
        }
    }

    /// Total bytes of a region with this layout.
    pub fn total_size(&self) -> usize {
        self.header().total_size as usize
    }
}

/// Why a region was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionError {
    TooSmall { len: usize },
    Misaligned,
    BadMagic { found: u64 },
    BadVersion { found: u32 },
    BadHeaderSize { found: u32 },
    BadTotalSize { header: u64, mapped: usize },
    BadSection { name: &'static str },
}

impl std::fmt::Display for RegionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegionError::TooSmall { len } => write!(
                f,
                "dst region is {len} bytes, smaller than its {}-byte header",
                size_of::<Header>()
            ),
            RegionError::Misaligned => write!(f, "dst region is not 8-byte aligned"),
            RegionError::BadMagic { found } => write!(
                f,
                "dst region has magic {found:#018x}, expected {MAGIC:#018x}: not a dst region"
            ),
            RegionError::BadVersion { found } => write!(
                f,
                "dst region has layout version {found}, this SDK speaks version {VERSION}: rebuild the target and the explorer from the same dst"
            ),
            RegionError::BadHeaderSize { found } => write!(
                f,
                "dst region header is {found} bytes, this SDK expects {}",
                size_of::<Header>()
            ),
            RegionError::BadTotalSize { header, mapped } => write!(
                f,
                "dst region header says {header} bytes but {mapped} bytes are mapped"
            ),
            RegionError::BadSection { name } => write!(
                f,
                "dst region section '{name}' is misaligned, overlaps another or lies outside the region"
            ),
        }
    }
}

impl std::error::Error for RegionError {}

/// Checks every header field of the region at `base` (`len` bytes mapped)
/// and returns its sections.
///
/// # Safety
/// `base` must be valid for reads of `len` bytes.
pub unsafe fn validate(base: *const u8, len: usize) -> Result<Sections, RegionError> {
    if len < size_of::<Header>() {
        return Err(RegionError::TooSmall { len });
    }
    if !(base as usize).is_multiple_of(align_of::<Header>()) {
        return Err(RegionError::Misaligned);
    }
    // SAFETY: `base` is aligned for `Header` and valid for `len >= size_of::<Header>()`
    // bytes (checked above, and by the caller's contract). Every bit pattern is a
    // valid `Header` (integers and atomics only).
    let header = unsafe { &*(base as *const Header) };
    if header.magic != MAGIC {
        return Err(RegionError::BadMagic {
            found: header.magic,
        });
    }
    if header.version != VERSION {
        return Err(RegionError::BadVersion {
            found: header.version,
        });
    }
    if header.header_size as usize != size_of::<Header>() {
        return Err(RegionError::BadHeaderSize {
            found: header.header_size,
        });
    }
    let in_segment = usize::try_from(header.total_size).is_ok_and(|t| segment_size(t) == len);
    if header.total_size != len as u64 && !in_segment {
        return Err(RegionError::BadTotalSize {
            header: header.total_size,
            mapped: len,
        });
    }
    // The region: a segment's spare page is no part of it.
    let len = header.total_size as usize;
    let sections = [
        ("input", header.input_offset, Some(header.input_capacity)),
        (
            "coverage",
            header.coverage_offset,
            Some(header.coverage_size),
        ),
        (
            "sites",
            header.sites_offset,
            header
                .sites_capacity
                .checked_mul(size_of::<SiteState>() as u64),
        ),
        (
            "decisions",
            header.decisions_offset,
            header
                .decisions_capacity
                .checked_mul(size_of::<DecisionRecord>() as u64),
        ),
        ("events", header.events_offset, Some(header.events_capacity)),
    ];
    // Sections must appear in this order, 8-aligned, after the header, inside
    // the region and without overlap.
    let mut floor = size_of::<Header>() as u64;
    for (name, offset, bytes) in sections {
        let end = bytes.and_then(|b| offset.checked_add(b));
        match end {
            Some(end) if offset >= floor && offset.is_multiple_of(8) && end <= len as u64 => {
                floor = end
            }
            _ => return Err(RegionError::BadSection { name }),
        }
    }
    // Every offset and size is now at most `len`, so fits a usize.
    Ok(Sections {
        total_size: len,
        input_offset: header.input_offset as usize,
        input_capacity: header.input_capacity as usize,
        coverage_offset: header.coverage_offset as usize,
        coverage_size: header.coverage_size as usize,
        sites_offset: header.sites_offset as usize,
        sites_capacity: header.sites_capacity as usize,
        decisions_offset: header.decisions_offset as usize,
        decisions_capacity: header.decisions_capacity as usize,
        events_offset: header.events_offset as usize,
        events_capacity: header.events_capacity as usize,
    })
}

/// Where a region's memory comes from, and what dropping the region does.
enum Backing {
    /// This process's heap (local mode, in-process runs).
    Heap(#[allow(dead_code)] Box<[u64]>),
    /// A shared mapping of `len` bytes, unmapped on drop: anonymous (shared
    /// with forked children), or of a named segment, which is also removed
    /// when this value created it (`unlink`).
    #[cfg(unix)]
    Mapping { len: usize, unlink: Option<CString> },
    /// Memory this value does not own (a controller's, attached by the SDK).
    Borrowed,
}

/// A region: its memory (one of several backings) and its validated
/// sections. The only owner of region memory; everything else works on
/// [`RegionRef`] views borrowed from it.
pub struct Region {
    base: *mut u8,
    sections: Sections,
    #[cfg_attr(not(unix), allow(dead_code))]
    backing: Backing,
}

// SAFETY: a `Region` owns (or, `Borrowed`, is handed by its creator's
// contract) memory that is only accessed through views, whose accesses the
// region protocol serializes (see `RegionRef`'s Send/Sync justification).
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

impl Region {
    /// A zeroed region with `layout` in this process's heap, reset for an
    /// empty input.
    pub fn new(layout: Layout) -> Region {
        let words = layout.total_size().div_ceil(8);
        let mut memory = vec![0u64; words].into_boxed_slice();
        let base = memory.as_mut_ptr().cast::<u8>();
        // SAFETY: `memory` holds `total_size` zeroed bytes, 8-aligned, owned
        // by the region from now on.
        unsafe { Region::init(base, layout, Backing::Heap(memory)) }
    }

    /// A zeroed region with `layout` in an anonymous shared mapping: what a
    /// forked child writes there, its parent reads.
    #[cfg(unix)]
    pub fn shared(layout: Layout) -> std::io::Result<Region> {
        let len = layout.total_size();
        let base = crate::shm::anonymous_mapping(len, true)?;
        let backing = Backing::Mapping { len, unlink: None };
        // SAFETY: a fresh, zeroed, page-aligned mapping of `len` bytes.
        Ok(unsafe { Region::init(base, layout, backing) })
    }

    /// A zeroed region with `layout` in a new POSIX shared-memory segment
    /// called `name` (mode 0600; it must not exist yet), removed when the
    /// region is dropped: how another process reaches it (see [`crate::shm`]).
    #[cfg(unix)]
    pub fn create_segment(name: &CStr, layout: Layout) -> std::io::Result<Region> {
        let len = segment_size(layout.total_size());
        let base = crate::shm::create_mapping(name, len)?;
        let backing = Backing::Mapping {
            len,
            unlink: Some(name.to_owned()),
        };
        // SAFETY: a fresh, zeroed, page-aligned mapping of `len` bytes.
        Ok(unsafe { Region::init(base, layout, backing) })
    }

    /// Maps the existing segment called `name` and validates it: the target
    /// side of [`Region::create_segment`]. The segment stays; the mapping
    /// goes with the region.
    #[cfg(unix)]
    pub fn open_segment(name: &CStr) -> Result<Region, String> {
        let (base, len) = crate::shm::open_mapping(name)?;
        let backing = Backing::Mapping { len, unlink: None };
        // SAFETY: `base` maps `len` readable and writable bytes, owned by the
        // returned region (or unmapped by `Region`'s drop on failure).
        unsafe { Region::adopt(base, len, backing) }.map_err(|e| e.to_string())
    }

    /// A region over memory someone else owns, validated.
    ///
    /// # Safety
    /// `base` must be valid for reads and writes of `len` bytes for as long
    /// as the returned region (and every view of it) is used.
    pub unsafe fn borrowed(base: *mut u8, len: usize) -> Result<Region, RegionError> {
        // SAFETY: forwarded from this function's contract.
        unsafe { Region::adopt(base, len, Backing::Borrowed) }
    }

    /// Validates the region at `base` and takes `backing` over (it is
    /// released, by the drop of the failed region, if validation fails).
    ///
    /// # Safety
    /// `base` must be valid for reads and writes of `len` bytes for as long
    /// as `backing` keeps it.
    unsafe fn adopt(base: *mut u8, len: usize, backing: Backing) -> Result<Region, RegionError> {
        let mut region = Region {
            base,
            sections: EMPTY_SECTIONS,
            backing,
        };
        // SAFETY: forwarded from this function's contract.
        region.sections = unsafe { validate(base, len)? };
        Ok(region)
    }

    /// Writes `layout`'s header at `base` and resets the region.
    ///
    /// # Safety
    /// `base` is 8-aligned, valid for reads and writes of
    /// `layout.total_size()` zeroed bytes, and kept by `backing`.
    unsafe fn init(base: *mut u8, layout: Layout, backing: Backing) -> Region {
        // SAFETY: the memory holds at least `size_of::<Header>()` bytes,
        // aligned to 8 (the caller's contract).
        unsafe { base.cast::<Header>().write(layout.header()) };
        // SAFETY: as above; the header was just written.
        let region = unsafe { Region::adopt(base, layout.total_size(), backing) }
            .expect("a freshly written header is valid");
        region.view().reset(&[], 0);
        region
    }

    /// The spare page of a segment's mapping (see [`segment_size`]), if
    /// this region maps a whole segment.
    #[cfg(unix)]
    pub fn spare_page(&self) -> Option<*mut u8> {
        let Backing::Mapping { len, .. } = self.backing else {
            return None;
        };
        let total = self.sections.total_size;
        // SAFETY: the mapping's last page, past the region's end.
        (len == segment_size(total) && len > total)
            .then(|| unsafe { self.base.add(len - crate::shm::page_size()) })
    }

    /// A view of the region, for as long as the region lives.
    pub fn view(&self) -> RegionRef<'_> {
        RegionRef {
            base: self.base,
            sections: &self.sections,
        }
    }

    /// The raw bytes of the whole region (header included).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the region's memory holds `total_size` bytes; `&mut self`
        // guarantees no view of it is used meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.base, self.sections.total_size) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Backing::Mapping { len, unlink } = &self.backing {
            // SAFETY: unmapping what `shared`, `create_segment` or
            // `open_segment` mapped, once; removing the segment this region
            // created.
            unsafe {
                libc::munmap(self.base.cast(), *len);
                if let Some(name) = unlink {
                    libc::shm_unlink(name.as_ptr());
                }
            }
        }
    }
}

/// The size of the shared-memory segment that holds a region of `total`
/// bytes ([`Region::create_segment`]): whole pages, and one page more that
/// nothing reads or writes, where a fork server puts a guard (see
/// `forkserver::hand_on_region`).
pub fn segment_size(total: usize) -> usize {
    #[cfg(unix)]
    let page = crate::shm::page_size();
    #[cfg(not(unix))]
    let page = 4096;
    total
        .checked_next_multiple_of(page)
        .and_then(|whole| whole.checked_add(page))
        .unwrap_or(usize::MAX)
}

/// Sections of nothing: those of a region until it is validated.
const EMPTY_SECTIONS: Sections = Sections {
    total_size: 0,
    input_offset: 0,
    input_capacity: 0,
    coverage_offset: 0,
    coverage_size: 0,
    sites_offset: 0,
    sites_capacity: 0,
    decisions_offset: 0,
    decisions_capacity: 0,
    events_offset: 0,
    events_capacity: 0,
};

/// A view of a region, valid while the [`Region`] it was borrowed from
/// lives. Cheap to copy; all access goes through it.
#[derive(Clone, Copy)]
pub struct RegionRef<'a> {
    base: *mut u8,
    sections: &'a Sections,
}

// SAFETY: a `RegionRef` only hands out shared references to atomics and to
// byte ranges that the protocol gives to one side at a time (the controller
// writes the input and resets fields between runs; the SDK writes during a
// run under its own lock), so sharing it across threads is sound.
unsafe impl Send for RegionRef<'_> {}
// SAFETY: as above.
unsafe impl Sync for RegionRef<'_> {}

impl<'a> RegionRef<'a> {
    /// The run's writes into this region (`dst_core`'s, one source with
    /// the KVM guest runtime).
    #[inline]
    pub fn writer(&self) -> Writer<'a> {
        // SAFETY: the sections were validated against the region (or laid
        // out for it), which lives for `'a`.
        unsafe { Writer::new(self.base, self.sections) }
    }

    /// The header: its per-run fields (the layout fields may have been
    /// written over by a target: read [`RegionRef::sections`] instead).
    #[inline]
    pub fn header(&self) -> &'a Header {
        self.writer().header()
    }

    /// This view, with a lifetime the caller vouches for: for holders that
    /// the compiler cannot tie to the region (LibAFL's observers).
    ///
    /// # Safety
    /// The region must outlive every use of the returned view.
    pub unsafe fn unbounded<'b>(self) -> RegionRef<'b> {
        RegionRef {
            base: self.base,
            // SAFETY: the caller's contract keeps the sections (inside the
            // region) alive as long as the view is used.
            sections: unsafe { &*std::ptr::from_ref(self.sections) },
        }
    }

    /// The layout, as validated when the region was made or attached.
    pub fn sections(&self) -> &'a Sections {
        self.sections
    }

    pub fn base(&self) -> *mut u8 {
        self.base
    }

    /// The input bytes of the current run.
    pub fn input(&self) -> &'a [u8] {
        let s = self.sections;
        let len = (self.header().input_len.load(Ordering::Acquire) as usize).min(s.input_capacity);
        // SAFETY: `validate` checked that the input section lies inside the
        // region; `len` is clamped to its capacity.
        unsafe { std::slice::from_raw_parts(self.base.add(s.input_offset), len) }
    }

    /// The coverage map, as raw pointer and length (written by instrumentation).
    pub fn coverage_ptr(&self) -> (*mut u8, usize) {
        let s = self.sections;
        // SAFETY: `validate` checked the coverage section lies inside the region.
        let ptr = unsafe { self.base.add(s.coverage_offset) };
        (ptr, s.coverage_size)
    }

    /// The state of site `index`, if it fits the table.
    pub fn site(&self, index: usize) -> Option<&'a SiteState> {
        self.writer().site(index)
    }

    /// Writes decision record `index` if it fits.
    pub fn put_decision(&self, index: u64, record: DecisionRecord) {
        self.writer().put_decision(index, record);
    }

    /// Counts decision (site, value) in the coverage map
    /// ([`Writer::count_decision`]).
    #[inline]
    pub fn count_decision(&self, site: u32, value: u64) {
        self.writer().count_decision(site, value);
    }

    /// Counts a pair of conflicting operations in the order a controlled
    /// run observed them ([`Writer::count_interleaving`]).
    #[inline]
    pub fn count_interleaving(&self, first: u64, second: u64) {
        self.writer().count_interleaving(first, second);
    }

    /// The decision records written in this run (at most the capacity).
    pub fn decisions(&self) -> &'a [DecisionRecord] {
        let s = self.sections;
        let n =
            (self.header().decisions.load(Ordering::Acquire) as usize).min(s.decisions_capacity);
        // SAFETY: the section is inside the region and 8-aligned; the first `n`
        // records were written in this run (or zeroed by reset).
        unsafe {
            std::slice::from_raw_parts(
                self.base.add(s.decisions_offset) as *const DecisionRecord,
                n,
            )
        }
    }

    /// Appends an event to the log; drops it (setting a status bit) if full.
    /// Callers serialize appends (the SDK holds its lock).
    pub fn push_event(&self, event: &Event) {
        let Ok(bytes) = postcard::to_allocvec(event) else {
            return;
        };
        let s = self.sections;
        let header = self.header();
        // A target may have written anything here: clamp it.
        let used = (header.events_len.load(Ordering::Acquire) as usize).min(s.events_capacity);
        let need = 4 + bytes.len();
        debug_assert!(
            bytes.len() <= u32::MAX as usize,
            "an event's length fits its prefix"
        );
        if used + need > s.events_capacity {
            header
                .status
                .fetch_or(STATUS_EVENTS_OVERFLOW, Ordering::Relaxed);
            return;
        }
        // SAFETY: `used + need <= events_capacity`, so the write stays in the
        // event section, which `validate` checked.
        unsafe {
            let at = self.base.add(s.events_offset + used);
            at.copy_from_nonoverlapping((bytes.len() as u32).to_le_bytes().as_ptr(), 4);
            at.add(4)
                .copy_from_nonoverlapping(bytes.as_ptr(), bytes.len());
        }
        header
            .events_len
            .store((used + need) as u64, Ordering::Release);
    }

    /// Decodes the event log. A malformed record ends the list.
    pub fn events(&self) -> Vec<Event> {
        let s = self.sections;
        let used =
            (self.header().events_len.load(Ordering::Acquire) as usize).min(s.events_capacity);
        // SAFETY: the first `used` bytes of the event section are inside the region.
        let log = unsafe { std::slice::from_raw_parts(self.base.add(s.events_offset), used) };
        let mut out = Vec::new();
        let mut at = 0;
        while at + 4 <= log.len() {
            let len = u32::from_le_bytes(log[at..at + 4].try_into().unwrap()) as usize;
            let Some(record) = log.get(at + 4..at + 4 + len) else {
                break;
            };
            match postcard::from_bytes(record) {
                Ok(event) => out.push(event),
                Err(_) => break,
            }
            at += 4 + len;
        }
        out
    }

    /// Prepares the region for a new run with `input`: copies the input,
    /// clears per-run fields, coverage, site states, decisions and events.
    /// Called by the controller between runs, never during one.
    pub fn reset(&self, input: &[u8], flags: u64) {
        self.reset_covering(input, flags, self.sections.coverage_size);
    }

    /// [`RegionRef::reset`], clearing only the first `coverage` bytes of the
    /// coverage map (the part a target is known to use).
    pub fn reset_covering(&self, input: &[u8], flags: u64, coverage: usize) {
        let s = self.sections;
        let h = self.header();
        let len = input.len().min(s.input_capacity);
        debug_assert!(
            coverage <= s.coverage_size,
            "the map is {} bytes, not {coverage}",
            s.coverage_size
        );
        // SAFETY: all writes stay within sections `validate` checked; no run is
        // in progress, so nothing else accesses these bytes.
        unsafe {
            let input_at = self.base.add(s.input_offset);
            input_at.copy_from_nonoverlapping(input.as_ptr(), len);
            self.base
                .add(s.coverage_offset)
                .write_bytes(0, coverage.min(s.coverage_size));
            let sites = self.base.add(s.sites_offset) as *mut SiteState;
            for i in 0..s.sites_capacity {
                sites.add(i).write(SiteState {
                    guidance: AtomicU64::new(f64::INFINITY.to_bits()),
                    ..SiteState::default()
                });
            }
        }
        h.input_len.store(len as u64, Ordering::Relaxed);
        h.flags.store(flags, Ordering::Relaxed);
        h.cursor.store(0, Ordering::Relaxed);
        h.decisions.store(0, Ordering::Relaxed);
        h.trace_hash.store(TRACE_HASH_INIT, Ordering::Relaxed);
        h.events_len.store(0, Ordering::Relaxed);
        h.first_failure.store(0, Ordering::Relaxed);
        let truncated = if len < input.len() {
            STATUS_INPUT_TRUNCATED
        } else {
            0
        };
        h.status.store(truncated, Ordering::Relaxed);
        h.crash_signal.store(0, Ordering::Relaxed);
        h.crash_address.store(0, Ordering::Relaxed);
        h.crash_depth.store(0, Ordering::Relaxed);
        h.contested.store(0, Ordering::Relaxed);
        h.crash_sp.store(0, Ordering::Relaxed);
        h.run_id.fetch_add(1, Ordering::Release);
    }
}

/// The region's layout and the protocol's constants as C definitions, for
/// a guest runtime written in C (the KVM executor's,
/// `sdk-c/guest/dst_kvm.c`, which includes it as `dst_region.h`): made
/// from this crate's types whenever a guest is built, so a layout change
/// cannot leave a guest behind. Each struct's fields sit at their Rust
/// offsets (padding where Rust has fields the guest does not read), and
/// `_Static_assert`s check offsets and sizes as the C compiler lays them
/// out.
pub fn c_header() -> String {
    use std::fmt::Write;
    use std::mem::{offset_of, size_of};
    /// (C type, field, offset, size) of the fields a guest reads.
    type Field = (&'static str, &'static str, usize, usize);
    macro_rules! fields {
        ($ty:ty: $($c:literal $name:ident),* $(,)?) => {
            [$(($c, stringify!($name), offset_of!($ty, $name), {
                // The field's own size, from a value of its type.
                fn size<T>(_: fn(&$ty) -> &T) -> usize { size_of::<T>() }
                size(|s: &$ty| &s.$name)
            })),*]
        };
    }
    let header: [Field; 23] = fields!(Header:
        "uint64_t" magic, "uint32_t" version, "uint32_t" header_size, "uint64_t" total_size,
        "uint64_t" input_offset, "uint64_t" input_capacity, "uint64_t" coverage_offset,
        "uint64_t" coverage_size, "uint64_t" sites_offset, "uint64_t" sites_capacity,
        "uint64_t" decisions_offset, "uint64_t" decisions_capacity, "uint64_t" events_offset,
        "uint64_t" events_capacity, "uint64_t" run_id, "uint64_t" input_len, "uint64_t" flags,
        "uint64_t" cursor, "uint64_t" decisions, "uint64_t" trace_hash, "uint64_t" events_len,
        "uint64_t" first_failure, "uint64_t" status,
    );
    let site: [Field; 5] = fields!(SiteState:
        "uint32_t" flags, "uint32_t" _reserved, "uint64_t" evaluations, "uint64_t" true_count,
        "uint64_t" guidance,
    );
    let decision: [Field; 6] = fields!(DecisionRecord:
        "uint64_t" offset, "uint64_t" value, "uint32_t" site, "uint16_t" width, "uint8_t" kind,
        "uint8_t" _reserved,
    );
    let mut out = String::from(
        "/* dst_region.h: generated from the dst crate's region layout\n \
         * (dst::region::c_header) when the guest is built. Do not edit. */\n\
         #include <stddef.h>\n#include <stdint.h>\n",
    );
    let mut strukt = |name: &str, fields: &[Field], size: usize| {
        let _ = writeln!(out, "struct {name} {{");
        let mut at = 0;
        for (i, &(ty, field, offset, bytes)) in fields.iter().enumerate() {
            debug_assert!(offset >= at, "fields in layout order");
            if offset > at {
                let _ = writeln!(out, "    uint8_t dst__pad{i}[{}];", offset - at);
            }
            let _ = writeln!(out, "    {ty} {field};");
            at = offset + bytes;
        }
        if size > at {
            let _ = writeln!(out, "    uint8_t dst__pad_end[{}];", size - at);
        }
        let _ = writeln!(out, "}};");
        let _ = writeln!(
            out,
            "_Static_assert(sizeof(struct {name}) == {size}, \"struct {name}'s size\");"
        );
        for &(_, field, offset, _) in fields {
            let _ = writeln!(
                out,
                "_Static_assert(offsetof(struct {name}, {field}) == {offset}, \"{name}.{field}\");"
            );
        }
    };
    strukt("dst__header", &header, size_of::<Header>());
    strukt("dst__site_state", &site, size_of::<SiteState>());
    strukt("dst__decision", &decision, size_of::<DecisionRecord>());
    use crate::decision::Kind;
    let constants: [(&str, u64); 20] = [
        ("DST_REGION_MAGIC", MAGIC),
        ("DST_REGION_VERSION", u64::from(VERSION)),
        ("DST_FLAG_TRACE_SITES", FLAG_TRACE_SITES),
        ("DST_FLAG_EVENTS", FLAG_EVENTS),
        ("DST_STATUS_SITES_OVERFLOW", STATUS_SITES_OVERFLOW),
        ("DST_SITE_HIT", u64::from(SITE_HIT)),
        ("DST_SITE_TRUE", u64::from(SITE_TRUE)),
        ("DST_SITE_FALSE", u64::from(SITE_FALSE)),
        ("DST_DECISION_WINDOW", DECISION_WINDOW),
        ("DST_SEED_BYTES", crate::decision::SEED_BYTES as u64),
        (
            "DST_FAULT_THRESHOLD",
            u64::from(crate::decision::FAULT_THRESHOLD),
        ),
        ("DST_BUILTIN_SITES", crate::catalog::BUILTIN.len() as u64),
        ("DST_U64", Kind::U64 as u64),
        ("DST_BELOW", Kind::Below as u64),
        ("DST_BOOL", Kind::Bool as u64),
        ("DST_FAULT", Kind::Fault as u64),
        ("DST_TRACE_HASH_INIT", TRACE_HASH_INIT),
        ("DST_FNV64_PRIME", crate::hash::FNV64_PRIME),
        ("DST_FNV32_OFFSET", u64::from(crate::hash::FNV32_OFFSET)),
        ("DST_FNV32_PRIME", u64::from(crate::hash::FNV32_PRIME)),
    ];
    for (name, value) in constants {
        let _ = writeln!(out, "#define {name} {value:#x}ull");
    }
    out
}
