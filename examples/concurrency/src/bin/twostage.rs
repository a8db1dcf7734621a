//! Explorer binary for the `twostage` program (see the crate docs).
dst_fuzz::target!(|| dst_example_concurrency::run("twostage"));
