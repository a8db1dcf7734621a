//! A cargo-fuzz target with magic values: a record parser with a 4-byte
//! magic, a 16-bit version and a length field (examples/libfuzzer/magic.c
//! in Rust). Its bug: the length is checked against the body, not against
//! the input, so a record whose length says more than follows slices past
//! the end. Mutation alone would need about 2^48 tries for the magic and
//! the version; comparison feedback reads them from the comparisons.
#![no_main]

use libfuzzer_sys::fuzz_target;

fn parse(data: &[u8]) -> Option<(u8, &[u8])> {
    if data.len() < 8 || data[..4] != *b"DST!" {
        return None;
    }
    if u16::from_le_bytes([data[4], data[5]]) != 0x0302 {
        return None;
    }
    let length = usize::from(data[6]);
    if length > 16 {
        return None;
    }
    Some((data[7], &data[8..8 + length]))
}

fuzz_target!(|data: &[u8]| {
    if let Some((kind, body)) = parse(data) {
        std::hint::black_box((kind, body));
    }
});
