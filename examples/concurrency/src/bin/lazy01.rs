//! Explorer binary for the `lazy01` program (see the crate docs).
dst_fuzz::target!(|| dst_example_concurrency::run("lazy01"));
