//! The fork server: a target process that the process executor starts once
//! and that forks a fresh child for every run, so that loading the program
//! and its libraries (and, with `DST_DEFER=1`, its setup) happens once.
//!
//! This module always holds the protocol (the constants both sides use)
//! and the catalog answer every Rust binary gives before `main`
//! ([`CATALOG_OUT_ENV`]); the server itself (`server`, `pages`) is the
//! `forkserver` feature, on Unix. Without it [`run`] runs its body once and
//! a program under the process executor does not greet it (the executor
//! says so in one line).
//!
//! The executor starts the target with `DST_FORKSERVER=CTL,STATUS` (two
//! pipe descriptors) next to `DST_REGION`. Where the server starts:
//! - by default in a constructor, before `main` (libdst's, and this crate's
//!   on Linux for Rust binaries);
//! - with `DST_DEFER=1`, in [`crate::lifecycle::setup_complete`] (C:
//!   `dst_setup_complete`), so that the setup before it runs once. Setup
//!   must not start threads (only the forking thread lives on in a child)
//!   and should not take decisions (they see the nominal input).
//!
//! Before greeting the executor, the server learns which code pages runs
//! execute (a few runs of the program, unseen; `pages`), and keeps exactly
//! those mapped, so each child inherits them and no more.
//!
//! Protocol: the server writes [`HELLO`] and the bytes of the coverage map
//! its edges use (0: all of it), each a little-endian `u32`, on the status
//! pipe; then for each [`CMD_RUN`] it reads on the command pipe, it forks,
//! puts the child's pid in the region's header (`pid`), waits for the
//! child to end, puts its raw wait status in `wait_status` and marks the
//! header's `done` word [`DONE_EXITED`](crate::region::DONE_EXITED) with the run's number (`go`), and
//! wakes it: the executor waits on that futex, and reads nothing from the
//! pipe per run. Each child leads its own process group, so the executor can kill
//! whatever the run left behind. The server exits when the command pipe
//! closes.
//!
//! Persistent mode, [`run`] (C: `dst_run`): the child runs the body once per
//! input; after each it sets `done` to the run's number (`go`) and waits on
//! `go` (a futex in the shared region) until the executor posts the next
//! run, with no stop, no continue and no server in between. The server
//! stays in its wait for the child until the child ends (after
//! [`PERSISTENT_RUNS`], or a crash, or the executor's kill). The body must
//! leave no state behind that changes the next run.

#[cfg(all(unix, feature = "forkserver"))]
mod server;
#[cfg(all(unix, feature = "forkserver"))]
pub(crate) use server::on_setup_complete;
#[cfg(all(unix, feature = "forkserver"))]
pub use server::{LearnedFault, in_child, learned_fault, run, set_fault_registrar};

/// A fault a learning run registered: its name, file and line.
#[cfg(not(all(unix, feature = "forkserver")))]
pub type LearnedFault = (String, String, u32);

/// Whether this process is a run forked by a fork server: never without
/// one.
#[cfg(not(all(unix, feature = "forkserver")))]
pub fn in_child() -> bool {
    false
}

/// Persistent mode without a fork server: runs `body` once, as the whole
/// program is one run (a wasm module, which the wasm executor restores
/// from a snapshot instead; or a program built without the `forkserver`
/// feature).
#[cfg(not(all(unix, feature = "forkserver")))]
pub fn run(mut body: impl FnMut()) {
    body();
}

/// Nothing learns faults without a server.
#[cfg(not(all(unix, feature = "forkserver")))]
#[doc(hidden)]
pub fn set_fault_registrar(_: fn(&[LearnedFault])) {}

/// Nothing learns faults without a server.
#[cfg(not(all(unix, feature = "forkserver")))]
#[doc(hidden)]
pub fn learned_fault(_: &str, _: &str, _: u32) {}

/// Nothing to start without a server.
#[cfg(not(all(unix, feature = "forkserver")))]
pub(crate) fn on_setup_complete() {}

/// Set to `0` to turn off learning the code pages runs execute (see the
/// module doc).
pub const LEARN_ENV: &str = "DST_FORKSERVER_LEARN";
/// Names the two descriptors: `CTL,STATUS`.
pub const FORKSERVER_ENV: &str = "DST_FORKSERVER";
/// Start the server in `setup_complete` instead of before `main`.
pub const DEFER_ENV: &str = "DST_DEFER";
/// The server's greeting.
pub const HELLO: u32 = u32::from_le_bytes(*b"DSTF");
/// The executor's request for one run.
pub const CMD_RUN: u32 = 1;
/// Runs of one persistent child before it exits and a fresh one is forked.
pub const PERSISTENT_RUNS: u32 = 10_000;
/// Sets the runs of one persistent child instead (`1`: a fork per input).
pub const PERSISTENT_RUNS_ENV: &str = "DST_PERSISTENT_RUNS";

/// Asks a program for its catalog: with this variable set, the program
/// writes its catalog (JSON, a list of `SiteInfo`) to the file it names and
/// exits before `main`. For binaries whose catalog cannot be read from the
/// file (Rust's link-time catalog holds pointers).
pub const CATALOG_OUT_ENV: &str = "DST_CATALOG_OUT";

#[cfg(unix)]
/// Called by constructors before `main`: answers [`CATALOG_OUT_ENV`], then
/// starts the server unless `DST_DEFER` asks for `setup_complete` (with
/// the `forkserver` feature); returns in each child.
pub fn on_load() {
    if let Some(path) = std::env::var_os(CATALOG_OUT_ENV) {
        let json = serde_json::to_vec(&crate::catalog::sites()).unwrap_or_default();
        let code = match std::fs::write(&path, json) {
            Ok(()) => 0,
            Err(_) => 1,
        };
        // SAFETY: ending the process before main, as asked.
        unsafe { libc::_exit(code) };
    }
    #[cfg(all(unix, feature = "forkserver"))]
    server::start();
}

/// Starts the server before `main` in Rust binaries that use this crate.
/// In a C or C++ program (this crate inside libdst, whose
/// `dst_register_catalog` is then visible), the server starts later, from
/// the constructor `dst.h` adds: after the program's catalog is registered
/// and its first constructors ran, so that children do not redo that work.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static ON_LOAD: extern "C" fn() = {
    extern "C" fn on_load_ctor() {
        // SAFETY: a lookup of a NUL-terminated name in the global scope.
        let libdst = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"dst_register_catalog".as_ptr()) };
        if libdst.is_null() {
            on_load();
        }
    }
    on_load_ctor
};
