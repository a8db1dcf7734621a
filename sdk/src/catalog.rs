//! The link-time catalog: every assertion and fault site of a binary.
//!
//! Each `assert_*!` and `fault!` expansion places one static [`Site`] in the
//! [`CATALOG`] link section (through `linkme`), so the whole list is known
//! before any run and without running the target's logic. A site's index in
//! the catalog is its slot in the region's site table.

use serde::{Deserialize, Serialize};

#[doc(hidden)]
pub use linkme;

/// Every site linked into this binary.
#[linkme::distributed_slice]
pub static CATALOG: [Site];

/// What an assertion (or fault point) claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Always,
    AlwaysOrUnreachable,
    Sometimes,
    Reachable,
    Unreachable,
    AlwaysGreaterThan,
    AlwaysGreaterThanOrEqualTo,
    AlwaysLessThan,
    AlwaysLessThanOrEqualTo,
    SometimesGreaterThan,
    SometimesGreaterThanOrEqualTo,
    SometimesLessThan,
    SometimesLessThanOrEqualTo,
    AlwaysSome,
    SometimesAll,
    /// A `dst::fault!` point: not a property, listed so reports can name it.
    Fault,
}

/// How a kind is judged over a campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// True every time; must be reached at least once.
    Always,
    /// True every time; never reaching it is fine.
    AlwaysOrUnreachable,
    /// True at least once.
    Sometimes,
    /// Must be reached.
    Reachable,
    /// Must never be reached.
    Unreachable,
    /// Not a property.
    None,
}

impl Kind {
    pub fn claim(self) -> Claim {
        use Kind::*;
        match self {
            Always
            | AlwaysGreaterThan
            | AlwaysGreaterThanOrEqualTo
            | AlwaysLessThan
            | AlwaysLessThanOrEqualTo
            | AlwaysSome => Claim::Always,
            AlwaysOrUnreachable => Claim::AlwaysOrUnreachable,
            Sometimes
            | SometimesGreaterThan
            | SometimesGreaterThanOrEqualTo
            | SometimesLessThan
            | SometimesLessThanOrEqualTo
            | SometimesAll => Claim::Sometimes,
            Reachable => Claim::Reachable,
            Unreachable => Claim::Unreachable,
            Fault => Claim::None,
        }
    }

    /// Whether one evaluation with this condition breaks the property.
    /// (For reachable and unreachable the condition is "reached", so `true`.)
    #[inline]
    pub fn fails_on(self, condition: bool) -> bool {
        match self.claim() {
            Claim::Always | Claim::AlwaysOrUnreachable => !condition,
            Claim::Unreachable => true,
            _ => false,
        }
    }

    /// Whether the property must be reached in a campaign (Antithesis' `must_hit`).
    pub fn must_hit(self) -> bool {
        matches!(
            self.claim(),
            Claim::Always | Claim::Sometimes | Claim::Reachable
        )
    }

    /// The snake_case name used in JSON and reports.
    pub fn name(self) -> &'static str {
        use Kind::*;
        match self {
            Always => "always",
            AlwaysOrUnreachable => "always_or_unreachable",
            Sometimes => "sometimes",
            Reachable => "reachable",
            Unreachable => "unreachable",
            AlwaysGreaterThan => "always_greater_than",
            AlwaysGreaterThanOrEqualTo => "always_greater_than_or_equal_to",
            AlwaysLessThan => "always_less_than",
            AlwaysLessThanOrEqualTo => "always_less_than_or_equal_to",
            SometimesGreaterThan => "sometimes_greater_than",
            SometimesGreaterThanOrEqualTo => "sometimes_greater_than_or_equal_to",
            SometimesLessThan => "sometimes_less_than",
            SometimesLessThanOrEqualTo => "sometimes_less_than_or_equal_to",
            AlwaysSome => "always_some",
            SometimesAll => "sometimes_all",
            Fault => "fault",
        }
    }
}

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
    /// This site's index in [`CATALOG`] (its slot in the region's site table).
    #[inline]
    pub fn index(&'static self) -> usize {
        let start = CATALOG.as_ptr() as usize;
        (self as *const Site as usize - start) / size_of::<Site>()
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

/// The catalog of this binary, in index order.
pub fn sites() -> Vec<SiteInfo> {
    CATALOG.iter().map(Site::info).collect()
}

/// A stable 32-bit id for a source location (FNV-1a), usable in `const`.
pub const fn site_hash(file: &str, line: u32, column: u32) -> u32 {
    let bytes = file.as_bytes();
    let mut h: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u32;
        h = h.wrapping_mul(0x0100_0193);
        i += 1;
    }
    let tail = [line, column];
    let mut j = 0;
    while j < 2 {
        let w = tail[j].to_le_bytes();
        let mut k = 0;
        while k < 4 {
            h ^= w[k] as u32;
            h = h.wrapping_mul(0x0100_0193);
            k += 1;
        }
        j += 1;
    }
    h
}

/// Defines a catalog site for the enclosing macro expansion.
#[doc(hidden)]
#[macro_export]
macro_rules! __site {
    ($kind:ident, $msg:expr, $cond:expr) => {{
        #[$crate::catalog::linkme::distributed_slice($crate::catalog::CATALOG)]
        #[linkme(crate = $crate::catalog::linkme)]
        static SITE: $crate::catalog::Site = $crate::catalog::Site {
            kind: $crate::catalog::Kind::$kind,
            message: $msg,
            condition: $cond,
            file: file!(),
            line: line!(),
            column: column!(),
            module: module_path!(),
            id: $crate::catalog::site_hash(file!(), line!(), column!()),
        };
        &SITE
    }};
}
