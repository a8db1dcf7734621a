//! Compiles the engine's C parts, bundled into libdst_engine.a: its `main`
//! (`src/main.c`: C, because it takes the harness's optional
//! `LLVMFuzzerInitialize` and a sanitizer's death callback as weak
//! symbols, which stable Rust cannot declare) and the interposed
//! comparison functions (`src/intercept.c`: C, because Rust's own slice
//! comparisons call `memcmp` and `bcmp`, the very functions interposed).
fn main() {
    println!("cargo:rerun-if-changed=src/main.c");
    println!("cargo:rerun-if-changed=src/intercept.c");
    cc::Build::new()
        .file("src/main.c")
        .file("src/intercept.c")
        .compile("dst_engine_main");
}
