//! Compiles the engine's C `main` (`src/main.c`), bundled into
//! libdst_engine.a: C, because it takes the harness's optional
//! `LLVMFuzzerInitialize` as a weak symbol, which stable Rust cannot
//! declare.
fn main() {
    println!("cargo:rerun-if-changed=src/main.c");
    cc::Build::new()
        .file("src/main.c")
        .compile("dst_engine_main");
}
