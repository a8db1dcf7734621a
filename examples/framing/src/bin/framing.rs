//! Fuzz target: decode frames from random bytes (hangs and aborts lurk).
dst_fuzz::target!(|| {
    dst_example_framing::simulate();
});
