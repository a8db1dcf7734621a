//! `cargo dst-fuzz`: builds dst targets with edge coverage on the user's
//! crates and runs their explorer; also its own `RUSTC_WRAPPER` during
//! builds. Glue only: everything it does is in `dst_fuzz::driver`.

fn main() {
    // Output piped into `head` ends quietly, as for other command-line tools.
    // SAFETY: setting a signal's action to the default, before any thread.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    std::process::exit(dst_fuzz::driver::main(std::env::args_os().collect()));
}
