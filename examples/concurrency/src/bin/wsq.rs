//! Explorer binary for the `wsq` program (see the crate docs).
dst_fuzz::target!(|| dst_example_concurrency::run("wsq"));
