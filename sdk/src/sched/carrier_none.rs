//! Where corosensei does not run (wasm), controlled Rust threads stay OS
//! threads: these stand in for `carrier.rs` and are never reached.

use super::ThreadKey;

pub(super) const AVAILABLE: bool = false;

/// # Safety
/// None needed: nothing is spawned.
pub(super) unsafe fn spawn<F: FnOnce()>(
    _key: ThreadKey,
    _size: Option<usize>,
    _body: F,
) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

pub(super) fn resume(_tid: usize) -> bool {
    unreachable!("no continuations on this target")
}

pub(super) fn suspend() {
    unreachable!("no continuations on this target")
}

pub(super) fn teardown() {}

pub(super) fn teardown_threads(_tids: &[usize]) {}

pub(crate) fn local<T: 'static>(_index: usize, _init: impl FnOnce() -> T) -> Option<*const T> {
    None
}
