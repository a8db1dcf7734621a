//! The branchy 16-byte closure of `fuzzer/benches/throughput.rs`, as a target
//! for `cargo dst-fuzz run throughput` (instrumented); see bench/compare.sh.

use std::hint::black_box;

#[inline(never)]
fn branchy(buf: &[u8; 16]) -> u32 {
    let mut acc = 0u32;
    for &b in buf {
        if b > 0x80 {
            acc = acc.wrapping_add(u32::from(b));
        } else if b == 0x10 {
            acc ^= 0x55;
        }
    }
    acc
}

dst_fuzz::target!(|| {
    let mut buf = [0u8; 16];
    dst::random::fill(&mut buf);
    black_box(branchy(&buf));
});
