//! Shared by the executors' test crates.

/// A pseudo-random input of `len` bytes for `seed` (its first eight bytes
/// are the stream's seed, so the tail is random too): the same inputs in
/// every run of the tests.
pub fn input(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}
