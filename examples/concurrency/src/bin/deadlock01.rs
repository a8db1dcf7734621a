//! Explorer binary for the `deadlock01` program (see the crate docs).
dst_fuzz::target!(|| dst_example_concurrency::run("deadlock01"));
