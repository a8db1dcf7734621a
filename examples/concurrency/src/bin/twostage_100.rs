//! Explorer binary for the `twostage_100` program (see the crate docs).
dst_fuzz::target!(|| dst_example_concurrency::run("twostage_100"));
