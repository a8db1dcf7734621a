//! A harness's own tokens: the strings in its read-only data (a magic
//! value compared with `memcmp`, a keyword), which mutation would take
//! ages to guess byte by byte. `cc --libfuzzer` reads them from the
//! harness's object files (not the linked program, whose C library and
//! libdst would bring thousands) and links them into a `dst_tokens`
//! section; a campaign over the program reads that section back, as
//! LibAFL's autotokens and AFL++'s `AFL_LLVM_DICT2FILE` do at build time.
//!
//! Section format: for each token, its length (one byte, 1..=64), then its
//! bytes.

use std::path::Path;

use object::{Object, ObjectSection};

/// The section the tokens live in.
pub const SECTION: &str = "dst_tokens";
/// Tokens longer than this are not kept (nor shorter than [`MIN_LEN`]).
pub const MAX_LEN: usize = 64;
/// Shorter strings are too common to be worth a mutation.
pub const MIN_LEN: usize = 3;
/// At most this many tokens per program.
pub const MAX_TOKENS: usize = 512;

/// The printable strings of `data` (NUL- or control-separated runs).
pub fn strings(data: &[u8], into: &mut Vec<Vec<u8>>) {
    for run in data.split(|b| !(0x20..0x7f).contains(b)) {
        if (MIN_LEN..=MAX_LEN).contains(&run.len())
            && !into.iter().any(|t| t == run)
            && into.len() < MAX_TOKENS
        {
            into.push(run.to_vec());
        }
    }
}

/// The strings of an object file's read-only data sections.
pub fn from_object(bytes: &[u8], into: &mut Vec<Vec<u8>>) {
    let Ok(file) = dst_executors::elf::parse(bytes) else {
        return;
    };
    for section in file.sections() {
        let name = section.name().unwrap_or_default();
        if (name == ".rodata" || name.starts_with(".rodata."))
            && let Ok(data) = section.data()
        {
            strings(data, into);
        }
    }
}

/// A C file that puts `tokens` in the [`SECTION`] of the program.
pub fn section_source(tokens: &[Vec<u8>]) -> String {
    let mut bytes = Vec::new();
    for token in tokens {
        debug_assert!((1..=MAX_LEN).contains(&token.len()));
        bytes.push(token.len() as u8);
        bytes.extend_from_slice(token);
    }
    let list: Vec<String> = bytes.iter().map(|b| b.to_string()).collect();
    format!(
        "/* written by cargo dst-fuzz cc: the harness's own strings */\n\
         __attribute__((section(\"{SECTION}\"), used)) static const unsigned char \
         dst__tokens[{}] = {{{}}};\n",
        bytes.len().max(1),
        if list.is_empty() {
            "0".into()
        } else {
            list.join(",")
        }
    )
}

/// The tokens in a program's [`SECTION`] (none if it has none, or is not
/// a file `object` reads).
pub fn from_program(path: &Path) -> Vec<Vec<u8>> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(file) = dst_executors::elf::parse(&bytes) else {
        return Vec::new();
    };
    let Some(data) = file.section_by_name(SECTION).and_then(|s| s.data().ok()) else {
        return Vec::new();
    };
    parse_section(data)
}

/// Reads the section's format; a cut-short record ends it.
pub fn parse_section(mut data: &[u8]) -> Vec<Vec<u8>> {
    let mut tokens = Vec::new();
    while let Some((&len, rest)) = data.split_first() {
        let len = len as usize;
        if len == 0 || len > rest.len() || tokens.len() == MAX_TOKENS {
            break;
        }
        tokens.push(rest[..len].to_vec());
        data = &rest[len..];
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_runs_become_tokens_once() {
        let mut tokens = Vec::new();
        strings(b"DST!\0ab\0%s: bad\0DST!\x01\x02GET /x\0", &mut tokens);
        assert_eq!(tokens, [&b"DST!"[..], b"%s: bad", b"GET /x"]);
    }

    #[test]
    fn the_section_reads_back_and_a_cut_record_ends_it() {
        let tokens = vec![b"DST!".to_vec(), b"magic".to_vec()];
        let source = section_source(&tokens);
        assert!(source.contains("section(\"dst_tokens\")"), "{source}");
        let bytes: Vec<u8> = [&[4u8][..], b"DST!", &[5], b"magic", &[9], b"cut"].concat();
        assert_eq!(parse_section(&bytes), tokens);
        assert!(parse_section(&[0, 1, 2]).is_empty());
        assert!(section_source(&[]).contains("[1] = {0}"));
    }
}
