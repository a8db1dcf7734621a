//! Explorer binary for the `reorder_50` program (see the crate docs).
dst_fuzz::target!(|| dst_example_concurrency::run("reorder_50"));
