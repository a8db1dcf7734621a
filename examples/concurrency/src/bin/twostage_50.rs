//! Explorer binary for the `twostage_50` program (see the crate docs).
dst_fuzz::target!(|| dst_example_concurrency::run("twostage_50"));
