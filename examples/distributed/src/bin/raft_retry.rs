//! Fuzz target: the replicated key-value store with the seeded bug `retry`.
dst_fuzz::target!(|| {
    dst_example_distributed::simulate(dst_example_distributed::Bug::from_name("retry"));
});
