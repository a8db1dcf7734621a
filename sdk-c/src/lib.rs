//! `dst-c`: libdst, the dst SDK for C and C++: `libdst.so` and `libdst.a`,
//! with `include/dst.h` declaring the C API and its assertion macros.
//!
//! The functions themselves are `dst-c-api` (`sdk-c/api/`), shared with
//! the fuzzing engine (`engine/`, `libdst_engine.a`, which adds the
//! explorer): this crate only packages them, so libdst stays the SDK alone.
//! A cdylib exports the `#[no_mangle]` functions of the crates it links;
//! the `use` below links `dst-c-api`.

pub use dst_c_api;
