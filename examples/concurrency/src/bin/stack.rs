//! Explorer binary for the `stack` program (see the crate docs).
dst_fuzz::target!(|| dst_example_concurrency::run("stack"));
