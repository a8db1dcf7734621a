//! Fuzz target: random pushes and pops on the ring queue, checked against a model.
dst_fuzz::target!(|| dst_example_queue::simulate(100));
