//! Fuzz target: the replicated key-value store, correct (no seeded bug).
dst_fuzz::target!(|| {
    dst_example_distributed::simulate(dst_example_distributed::Bug::from_name("none"));
});
