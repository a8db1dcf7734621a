//! A cargo-fuzz target over bytes: a record is `K`, a length byte, then
//! that many bytes of value. Its bug: the length is trusted, so a record
//! that claims more than it holds slices past the end.
#![no_main]

use dst_fuzz::fuzz_target;

fn value(record: &[u8]) -> Option<&[u8]> {
    let (&tag, rest) = record.split_first()?;
    let (&len, rest) = rest.split_first()?;
    (tag == b'K').then(|| &rest[..len as usize])
}

fuzz_target!(|data: &[u8]| {
    if let Some(value) = value(data) {
        let _ = std::str::from_utf8(value);
    }
});
