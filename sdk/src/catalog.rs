//! The link-time catalog: every assertion and fault site of a binary.
//!
//! Each `assert_*!` and `fault!` expansion places one static [`Site`] in the
//! [`CATALOG`] link section (through `linkme`), so the whole list is known
//! before any run and without running the target's logic. A site's index in
//! the catalog is its slot in the region's site table.
//!
//! In a WebAssembly module (where `linkme` has no link section to collect),
//! each expansion instead places a pointer-free record ([`c`]'s format,
//! with column and module) in the module's `dst_catalog` custom section,
//! which the wasm executor reads without running the module; [`CATALOG`] is
//! empty there, and local mode registers each site on its first use.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicPtr, Ordering};

#[cfg(not(target_family = "wasm"))]
#[doc(hidden)]
pub use linkme;

/// Every site linked into this binary.
#[cfg(not(target_family = "wasm"))]
#[linkme::distributed_slice]
pub static CATALOG: [Site];

/// Every site linked into this binary: none in a wasm module, whose
/// catalog is its `dst_catalog` custom section (see the module docs).
#[cfg(target_family = "wasm")]
pub static CATALOG: [Site; 0] = [];

pub use dst_core::kind::{Claim, Kind};

/// One site, as placed in the catalog by a macro.
#[derive(Debug)]
pub struct Site {
    pub kind: Kind,
    /// The property's name (the macro's `msg`); for faults, the fault's name.
    pub message: &'static str,
    /// The condition's source text (`stringify!`), or "" where there is none.
    pub condition: &'static str,
    pub file: &'static str,
    pub line: u32,
    pub column: u32,
    pub module: &'static str,
    /// `site_hash(file, line, column)`, computed at compile time.
    pub id: u32,
}

impl Site {
    /// This site's index in the catalog (its slot in the region's site
    /// table): its place in [`CATALOG`], or after it for a registered site.
    #[inline]
    pub fn index(&'static self) -> usize {
        let start = CATALOG.as_ptr() as usize;
        let at = self as *const Site as usize;
        if at >= start && at < start + CATALOG.len() * size_of::<Site>() {
            (at - start) / size_of::<Site>()
        } else {
            let mut foreign = foreign();
            match foreign.iter().position(|s| std::ptr::eq(*s, self)) {
                Some(i) => CATALOG.len() + i,
                // A wasm module's sites are registered on first use.
                None if cfg!(target_family = "wasm") => {
                    push_foreign(&mut foreign, self);
                    CATALOG.len() + foreign.len() - 1
                }
                None => usize::MAX,
            }
        }
    }

    /// An owned, serializable copy (what the kernel keeps per campaign).
    pub fn info(&'static self) -> SiteInfo {
        SiteInfo {
            index: self.index() as u32,
            kind: self.kind,
            message: self.message.to_string(),
            condition: self.condition.to_string(),
            location: Location {
                file: self.file.to_string(),
                line: self.line,
                column: self.column,
                module: self.module.to_string(),
            },
            id: self.id,
        }
    }
}

/// A source location.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Location {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub module: String,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// An owned catalog entry, independent of the binary it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteInfo {
    pub index: u32,
    pub kind: Kind,
    pub message: String,
    pub condition: String,
    pub location: Location,
    pub id: u32,
}

/// Sites registered at run time, after [`CATALOG`]'s: the C and C++ sites of
/// a binary linking libdst, read from its `dst_catalog` section.
static FOREIGN: std::sync::Mutex<Vec<&'static Site>> = std::sync::Mutex::new(Vec::new());

/// How many of [`FOREIGN`]'s sites [`get`] finds without its lock.
const UNLOCKED: usize = 1 << 14;

/// [`FOREIGN`]'s first [`UNLOCKED`] sites, each stored once registered and
/// never changed: [`get`] reads them without the lock, whose word is the only
/// thing a run would otherwise write on its page (and a forked run copies
/// each page it first writes).
static UNLOCKED_SITES: [AtomicPtr<Site>; UNLOCKED] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; UNLOCKED];

fn foreign() -> std::sync::MutexGuard<'static, Vec<&'static Site>> {
    let mut foreign = FOREIGN.lock().unwrap_or_else(|p| p.into_inner());
    if foreign.is_empty() {
        for site in BUILTIN.iter() {
            push_foreign(&mut foreign, site);
        }
    }
    foreign
}

/// Appends `site` to the locked `foreign` sites, and to [`UNLOCKED_SITES`]
/// if it fits.
fn push_foreign(foreign: &mut Vec<&'static Site>, site: &'static Site) {
    if let Some(slot) = UNLOCKED_SITES.get(foreign.len()) {
        debug_assert!(slot.load(Ordering::Relaxed).is_null());
        slot.store(std::ptr::from_ref(site).cast_mut(), Ordering::Release);
    }
    foreign.push(site);
}

const fn builtin(message: &'static str, line: u32) -> Site {
    Site {
        kind: Kind::Unreachable,
        message,
        condition: "",
        file: "dst/sched.rs",
        line,
        column: 0,
        module: "dst::sched",
        id: site_hash("dst/sched.rs", line, 0),
    }
}

/// The SDK's own properties, checked by the scheduler of controlled runs
/// (`dst::thread`, the `threads` feature). In every binary they come right after [`CATALOG`]
/// (first among the registered sites), so a C program's catalog is these
/// followed by its `dst_catalog` section.
pub static BUILTIN: [Site; 3] = [
    builtin("dst: deadlock (every live thread is blocked)", 1),
    builtin(
        "dst: a run exceeds the scheduling step bound (livelock or hang)",
        2,
    ),
    builtin("dst: a thread outlives the target body", 3),
];

/// Whether `message` names one of the SDK's own properties ([`BUILTIN`]).
pub fn is_builtin(message: &str) -> bool {
    BUILTIN.iter().any(|site| site.message == message)
}

/// Indices into [`BUILTIN`].
#[cfg(feature = "threads")]
pub(crate) const DEADLOCK: usize = 0;
#[cfg(feature = "threads")]
pub(crate) const LIVELOCK: usize = 1;
#[cfg(feature = "threads")]
pub(crate) const OUTLIVES: usize = 2;

/// Adds a site that is not in [`CATALOG`] (see `FOREIGN`); returns its index.
/// Register sites before the first run: the region's site table is sized
/// from [`count`].
pub fn register(site: Site) -> usize {
    let site: &'static Site = Box::leak(Box::new(site));
    let mut foreign = foreign();
    push_foreign(&mut foreign, site);
    CATALOG.len() + foreign.len() - 1
}

/// Every site: [`CATALOG`], then the registered ones.
pub fn all() -> Vec<&'static Site> {
    CATALOG.iter().chain(foreign().iter().copied()).collect()
}

/// How many sites there are (the size of the region's site table).
pub fn count() -> usize {
    CATALOG.len() + foreign().len()
}

/// The site at `index`.
pub fn get(index: usize) -> Option<&'static Site> {
    if let Some(site) = CATALOG.get(index) {
        return Some(site);
    }
    let at = index.checked_sub(CATALOG.len())?;
    let unlocked = UNLOCKED_SITES
        .get(at)
        .map(|slot| slot.load(Ordering::Acquire));
    match unlocked {
        // SAFETY: only `push_foreign` stores here: a leaked or static site.
        Some(site) if !site.is_null() => Some(unsafe { &*site }),
        _ => foreign().get(at).copied(),
    }
}

/// The catalog of this binary, in index order.
pub fn sites() -> Vec<SiteInfo> {
    all().into_iter().map(Site::info).collect()
}

/// A stable 32-bit id for a source location (FNV-1a), usable in `const`.
pub const fn site_hash(file: &str, line: u32, column: u32) -> u32 {
    crate::hash::site_hash(file.as_bytes(), line, column)
}

/// The [`Site`] of the enclosing macro expansion.
#[doc(hidden)]
#[macro_export]
macro_rules! __site_value {
    ($kind:ident, $msg:expr, $cond:expr) => {
        $crate::catalog::Site {
            kind: $crate::catalog::Kind::$kind,
            message: $msg,
            condition: $cond,
            file: file!(),
            line: line!(),
            column: column!(),
            module: module_path!(),
            id: $crate::catalog::site_hash(file!(), line!(), column!()),
        }
    };
}

/// Defines a catalog site for the enclosing macro expansion.
#[cfg(not(target_family = "wasm"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __site {
    ($kind:ident, $msg:expr, $cond:expr) => {{
        #[$crate::catalog::linkme::distributed_slice($crate::catalog::CATALOG)]
        #[linkme(crate = $crate::catalog::linkme)]
        static SITE: $crate::catalog::Site = $crate::__site_value!($kind, $msg, $cond);
        &SITE
    }};
}

/// Defines a catalog site for the enclosing macro expansion: in a wasm
/// module, a record in the `dst_catalog` custom section and a plain static.
#[cfg(target_family = "wasm")]
#[doc(hidden)]
#[macro_export]
macro_rules! __site {
    ($kind:ident, $msg:expr, $cond:expr) => {{
        const RECORD_LEN: usize =
            $crate::catalog::c::record_len($msg, $cond, file!(), module_path!());
        #[used]
        #[unsafe(link_section = "dst_catalog")]
        static RECORD: [u8; RECORD_LEN] = $crate::catalog::c::record(
            $crate::catalog::Kind::$kind,
            $msg,
            $cond,
            file!(),
            line!(),
            column!(),
            module_path!(),
        );
        static SITE: $crate::catalog::Site = $crate::__site_value!($kind, $msg, $cond);
        &SITE
    }};
}

/// The C and C++ catalog record format (see `sdk-c/include/dst.h`): a
/// `dst_catalog` ELF section of records, each a header followed by the
/// NUL-terminated message, condition and file, the next record starting at
/// the next 8-byte boundary. No pointers, so the section can be read from
/// the binary file as well as from memory.
///
/// A Rust site in a wasm module writes the same record with a longer header
/// ([`c::RUST_HEADER`]): the `reserved` field is the module path's length (the
/// path follows the file), then the column (`u32` at 24) and 4 reserved
/// bytes.
pub mod c {
    use super::{Kind, Location, SiteInfo, site_hash};

    /// `"DSTC"` read as a little-endian `u32`.
    pub const MAGIC: u32 = u32::from_le_bytes(*b"DSTC");
    /// Bytes of a record's header.
    pub const HEADER: usize = 24;
    /// Bytes of a record's header with column and module path.
    pub const RUST_HEADER: usize = 32;

    /// The number of `kind` in records (`dst.h`'s `DST_KIND_*`, and 14 to
    /// 16 for the kinds only Rust has).
    pub const fn number(kind: Kind) -> u16 {
        use Kind::*;
        match kind {
            Always => 1,
            AlwaysOrUnreachable => 2,
            Sometimes => 3,
            Reachable => 4,
            Unreachable => 5,
            AlwaysGreaterThan => 6,
            AlwaysGreaterThanOrEqualTo => 7,
            AlwaysLessThan => 8,
            AlwaysLessThanOrEqualTo => 9,
            SometimesGreaterThan => 10,
            SometimesGreaterThanOrEqualTo => 11,
            SometimesLessThan => 12,
            SometimesLessThanOrEqualTo => 13,
            AlwaysSome => 14,
            SometimesAll => 15,
            Fault => 16,
        }
    }

    /// Bytes of the record [`record`] writes for these strings.
    pub const fn record_len(message: &str, condition: &str, file: &str, module: &str) -> usize {
        let text = message.len() + condition.len() + file.len() + module.len() + 4;
        (RUST_HEADER + text).div_ceil(8) * 8
    }

    /// Writes `bytes` at `at`, then a NUL; returns the next position.
    const fn put(out: &mut [u8], at: usize, bytes: &[u8]) -> usize {
        let mut i = 0;
        while i < bytes.len() {
            out[at + i] = bytes[i];
            i += 1;
        }
        at + bytes.len() + 1
    }

    const fn put_u16(out: &mut [u8], at: usize, value: usize) {
        assert!(value <= u16::MAX as usize, "a catalog string is too long");
        let b = (value as u16).to_le_bytes();
        out[at] = b[0];
        out[at + 1] = b[1];
    }

    const fn put_u32(out: &mut [u8], at: usize, value: u32) {
        let b = value.to_le_bytes();
        let mut i = 0;
        while i < 4 {
            out[at + i] = b[i];
            i += 1;
        }
    }

    /// The record of a Rust site, at compile time (`N` is [`record_len`]).
    pub const fn record<const N: usize>(
        kind: Kind,
        message: &str,
        condition: &str,
        file: &str,
        line: u32,
        column: u32,
        module: &str,
    ) -> [u8; N] {
        assert!(N == record_len(message, condition, file, module));
        let mut out = [0u8; N];
        put_u32(&mut out, 0, MAGIC);
        put_u16(&mut out, 4, number(kind) as usize);
        put_u16(&mut out, 6, RUST_HEADER);
        put_u32(&mut out, 8, N as u32);
        put_u32(&mut out, 12, line);
        put_u16(&mut out, 16, message.len() + 1);
        put_u16(&mut out, 18, condition.len() + 1);
        put_u16(&mut out, 20, file.len() + 1);
        put_u16(&mut out, 22, module.len() + 1);
        put_u32(&mut out, 24, column);
        let at = put(&mut out, RUST_HEADER, message.as_bytes());
        let at = put(&mut out, at, condition.as_bytes());
        let at = put(&mut out, at, file.as_bytes());
        put(&mut out, at, module.as_bytes());
        out
    }

    /// The kind numbers of `dst.h` (`DST_KIND_*`).
    pub fn kind(number: u16) -> Option<Kind> {
        Kind::from_c(number)
    }

    /// One parsed record and where it starts in the section.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Record {
        pub offset: usize,
        pub kind: Kind,
        pub message: String,
        pub condition: String,
        pub file: String,
        pub line: u32,
        /// 0 and "" in C records.
        pub column: u32,
        pub module: String,
    }

    impl Record {
        /// As a catalog entry with catalog index `index`.
        pub fn info(&self, index: u32) -> SiteInfo {
            SiteInfo {
                index,
                kind: self.kind,
                message: self.message.clone(),
                condition: self.condition.clone(),
                location: Location {
                    file: self.file.clone(),
                    line: self.line,
                    column: self.column,
                    module: self.module.clone(),
                },
                id: site_hash(&self.file, self.line, self.column),
            }
        }
    }

    fn u16_at(bytes: &[u8], at: usize) -> usize {
        usize::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
    }

    fn u32_at(bytes: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
    }

    fn text(bytes: &[u8]) -> Option<String> {
        let text = bytes.strip_suffix(&[0])?;
        String::from_utf8(text.to_vec()).ok()
    }

    /// Parses the record at the start of `bytes` (which may run on past it).
    pub fn parse_one(bytes: &[u8]) -> Option<Record> {
        if bytes.len() < HEADER || u32_at(bytes, 0) != MAGIC {
            return None;
        }
        let kind = kind(u16_at(bytes, 4) as u16)?;
        let header = u16_at(bytes, 6);
        let size = u32_at(bytes, 8) as usize;
        let line = u32_at(bytes, 12);
        let rust = header >= RUST_HEADER;
        let module_len = if rust { u16_at(bytes, 22) } else { 0 };
        let lens = [u16_at(bytes, 16), u16_at(bytes, 18), u16_at(bytes, 20)];
        if header < HEADER
            || size > bytes.len()
            || header + lens.iter().sum::<usize>() + module_len > size
        {
            return None;
        }
        let message = text(&bytes[header..header + lens[0]])?;
        let at = header + lens[0];
        let condition = text(&bytes[at..at + lens[1]])?;
        let at = at + lens[1];
        let file = text(&bytes[at..at + lens[2]])?;
        let at = at + lens[2];
        let (column, module) = if rust {
            (u32_at(bytes, 24), text(&bytes[at..at + module_len])?)
        } else {
            (0, String::new())
        };
        Some(Record {
            offset: 0,
            kind,
            message,
            condition,
            file,
            line,
            column,
            module,
        })
    }

    /// Parses a whole section; zero padding between records is skipped, and
    /// anything else malformed ends the walk (what was read is returned).
    pub fn parse(section: &[u8]) -> Vec<Record> {
        let mut records = Vec::new();
        let mut at = 0;
        while at + HEADER <= section.len() {
            if u32_at(section, at) == 0 {
                at += 8;
                continue;
            }
            let Some(mut record) = parse_one(&section[at..]) else {
                break;
            };
            let size = u32_at(section, at + 8) as usize;
            record.offset = at;
            records.push(record);
            at = (at + size).div_ceil(8) * 8;
        }
        records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(message: &'static str) -> Site {
        Site {
            kind: Kind::Fault,
            message,
            condition: "",
            file: "",
            line: 0,
            column: 0,
            module: "",
            id: site_hash(message, 0, 0),
        }
    }

    #[test]
    fn registered_sites_are_found_by_index_with_and_without_the_lock() {
        let indices: Vec<usize> = ["first", "second"]
            .into_iter()
            .map(|m| register(fault(m)))
            .collect();
        for (index, message) in indices.iter().zip(["first", "second"]) {
            let site = get(*index).expect("registered");
            assert_eq!(site.message, message);
            assert_eq!(site.index(), *index);
            let at = index - CATALOG.len();
            let unlocked = UNLOCKED_SITES[at].load(Ordering::Acquire);
            assert!(std::ptr::eq(unlocked, site), "readable without the lock");
            assert!(std::ptr::eq(foreign()[at], site), "the same site under it");
        }
        assert!(get(usize::MAX).is_none());
        // The built-in sites come first, found both ways too.
        let builtin = get(CATALOG.len()).expect("a built-in site");
        assert!(std::ptr::eq(builtin, &BUILTIN[0]));
    }
}
