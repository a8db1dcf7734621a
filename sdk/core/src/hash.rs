//! FNV-1a, dst's one hash for names and ids that must be the same in every
//! run, build and process (std's hasher is keyed at random per process):
//! site ids, corpus file names, crash stack hashes; and [`fill64`], its
//! word-at-a-time variant for fill decisions (a harness's whole input is
//! one, hashed on every run). Written here rather than taken from a crate
//! because site ids are computed in `const` context, which needs a `const
//! fn`, and every level (the KVM guest's runtime too) must compute the
//! same values from this one `no_std` source.

/// The 32-bit FNV offset basis.
pub const FNV32_OFFSET: u32 = 0x811c_9dc5;
/// The 32-bit FNV prime.
pub const FNV32_PRIME: u32 = 0x0100_0193;
/// The 64-bit FNV offset basis.
pub const FNV64_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// The 64-bit FNV prime.
pub const FNV64_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 32-bit FNV-1a over bytes written in pieces (by value, so that it works in
/// `const fn`).
#[derive(Debug, Clone, Copy)]
pub struct Fnv32(u32);

impl Fnv32 {
    pub const fn new() -> Fnv32 {
        Fnv32(FNV32_OFFSET)
    }

    #[must_use]
    pub const fn write(self, bytes: &[u8]) -> Fnv32 {
        let mut h = self.0;
        let mut i = 0;
        while i < bytes.len() {
            h = (h ^ bytes[i] as u32).wrapping_mul(FNV32_PRIME);
            i += 1;
        }
        Fnv32(h)
    }

    pub const fn finish(self) -> u32 {
        self.0
    }
}

impl Default for Fnv32 {
    fn default() -> Fnv32 {
        Fnv32::new()
    }
}

/// 32-bit FNV-1a of `bytes`.
pub const fn fnv32(bytes: &[u8]) -> u32 {
    Fnv32::new().write(bytes).finish()
}

/// 64-bit FNV-1a of `bytes`.
pub const fn fnv64(bytes: &[u8]) -> u64 {
    let mut h = FNV64_OFFSET;
    let mut i = 0;
    while i < bytes.len() {
        h = (h ^ bytes[i] as u64).wrapping_mul(FNV64_PRIME);
        i += 1;
    }
    h
}

/// The hash of a fill decision's bytes: FNV-1a over little-endian 64-bit
/// words (the last one zero-padded), then the length, each step followed
/// by a shift that folds the high bits back down. Eight times fewer
/// dependent multiplications than [`fnv64`] over the bytes: on a
/// libFuzzer harness's 4 KiB input, byte-wise FNV was 7% of a run.
pub fn fill64(bytes: &[u8]) -> u64 {
    #[inline(always)]
    fn step(h: u64, word: u64) -> u64 {
        let h = (h ^ word).wrapping_mul(FNV64_PRIME);
        h ^ h >> 32
    }
    let mut h = FNV64_OFFSET;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        h = step(h, u64::from_le_bytes(word.try_into().expect("eight bytes")));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = step(h, u64::from_le_bytes(last));
    }
    step(h, bytes.len() as u64)
}

/// A stable 32-bit id for a source location (FNV-1a of the file's bytes,
/// then the line and column, little-endian), usable in `const`: the id of
/// every catalog site, Rust's (`dst::catalog::site_hash`) and C's.
pub const fn site_hash(file: &[u8], line: u32, column: u32) -> u32 {
    Fnv32::new()
        .write(file)
        .write(&line.to_le_bytes())
        .write(&column.to_le_bytes())
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // The reference vectors of the FNV specification.
        assert_eq!(fnv32(b""), 0x811c_9dc5);
        assert_eq!(fnv32(b"a"), 0xe40c_292c);
        assert_eq!(fnv32(b"foobar"), 0xbf9c_f968);
        assert_eq!(fnv64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv64(b"foobar"), 0x8594_4171_f739_67e8);
        // A fill's hash sees every byte, its position and the length
        // (padding zeros are not the same as no bytes).
        let base = fill64(b"0123456789abcdefg");
        for at in 0..17 {
            let mut changed = *b"0123456789abcdefg";
            changed[at] ^= 1;
            assert_ne!(fill64(&changed), base, "byte {at}");
        }
        assert_ne!(fill64(b"ab"), fill64(b"ab\0"));
        assert_ne!(fill64(b""), fill64(b"\0"));
        assert_ne!(fill64(b"abcdefgh"), fill64(b"bacdefgh"));
        // In pieces, the same.
        assert_eq!(
            Fnv32::new().write(b"foo").write(b"bar").finish(),
            fnv32(b"foobar")
        );
    }
}
