//! Explorer binary for the `reorder_20` program (see the crate docs).
dst_fuzz::target!(|| dst_example_concurrency::run("reorder_20"));
