//! Explorer binary for the `account` program (see the crate docs).
dst_fuzz::target!(|| dst_example_concurrency::run("account"));
