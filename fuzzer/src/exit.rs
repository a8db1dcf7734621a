//! Exit statuses of `cargo dst-fuzz` and of target binaries, one per cause,
//! the same for every command (the README's table is this one). A target
//! process that rejects its region exits with `dst::shm::EXIT_BAD_REGION`
//! (86), which the explorer reports as a `region` crash.

/// Nothing failed.
pub const OK: i32 = 0;
/// A must-hold property failed, or the target crashed or timed out.
pub const FINDING: i32 = 1;
/// The command line was wrong.
pub const USAGE: i32 = 2;
/// No target of that name.
pub const UNKNOWN_TARGET: i32 = 3;
/// An input, corpus or campaign file is unreadable or corrupt.
pub const BAD_INPUT: i32 = 4;
/// An output folder or file cannot be written.
pub const UNWRITABLE: i32 = 5;
/// The target binary died before the explorer started (a panic in setup).
pub const SETUP_FAILED: i32 = 6;
/// The target did not build.
pub const BUILD_FAILED: i32 = 7;
/// A check ran out of its budget before it reached a verdict (`lincheck
/// --timeout`).
pub const INCONCLUSIVE: i32 = 8;
/// An internal error of the explorer.
pub const INTERNAL: i32 = 70;

/// A command that failed: its exit status (one of this table's) and the
/// one line that says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub fn new(code: i32, message: impl Into<String>) -> Failure {
        debug_assert!(code != OK, "a failure has a failing status");
        Failure {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
