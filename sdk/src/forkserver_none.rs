//! The fork server where there are no processes to fork (a wasm module, run
//! by the wasm executor, which restores a snapshot instead): every run is
//! the whole program, so [`run`] runs its body once.

/// Whether this process is a run forked by a fork server: never here.
pub fn in_child() -> bool {
    false
}

/// Persistent mode: runs `body` once (see the Unix fork server's `run`).
pub fn run(mut body: impl FnMut()) {
    body();
}

/// Nothing to start.
pub(crate) fn on_setup_complete() {}
