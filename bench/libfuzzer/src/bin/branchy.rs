//! The branchy 16-byte closure of `fuzzer/benches/throughput.rs`, under libFuzzer.
#![no_main]

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

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut buf = [0u8; 16];
    let n = data.len().min(16);
    buf[..n].copy_from_slice(&data[..n]);
    black_box(branchy(&buf));
});
