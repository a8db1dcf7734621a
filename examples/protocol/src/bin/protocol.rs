//! Fuzz target: one session over a reordering, duplicating network.
dst_fuzz::target!(|| {
    dst_example_protocol::simulate();
});
