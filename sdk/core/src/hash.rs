//! FNV-1a, dst's one hash for names and ids that must be the same in every
//! run, build and process (std's hasher is keyed at random per process):
//! site ids, fill decisions, corpus file names, crash stack hashes. Written
//! here rather than taken from a crate because site ids are computed in
//! `const` context, which needs a `const fn`.

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
        // In pieces, the same.
        assert_eq!(
            Fnv32::new().write(b"foo").write(b"bar").finish(),
            fnv32(b"foobar")
        );
    }
}
