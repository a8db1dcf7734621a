//! Links the unwinder (libgcc_eh) into libdst.so itself, so the library
//! needs libgcc_s.so no more.
//!
//! Why: a fork-server target forks once per run, and each shared object it
//! loads is five more mappings for every fork and exit to copy and tear
//! down, with pages of its own to fault in again. Loading libgcc_s cost
//! 12 us of CPU per run of examples/c-kv (`bench/fork-learn.sh`, 199-205
//! against 188-190 us). Rust's standard library asks for libgcc_s (its
//! panics unwind); the whole static unwinder linked first satisfies those
//! references, and the linker (`--as-needed`) then drops libgcc_s. Its
//! symbols stay private to libdst: a cdylib exports only the `dst_*` API,
//! and libdst never lets a panic leave it. Not bundled into libdst.a: a
//! program linked statically gets the unwinder from its own compiler.
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-lib=static:+whole-archive,-bundle=gcc_eh");
    }
}
