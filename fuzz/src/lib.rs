//! `dst-fuzz-targets`: dst's own fuzz targets, explored with dst itself
//! (`cargo dst-fuzz run NAME`, from the repository root, where `fuzz/` is
//! this crate), one binary per parser of untrusted input:
//! - `region_header`: a region whose header bytes were scribbled on must be
//!   rejected with a one-line error, or accepted only if every section fits;
//!   reading an accepted region (input, events, decisions) never panics.
//! - `decision_decoder`: the decision stream (an input written out with
//!   [`dst::decision::materialize`] reads as the input did; value functions
//!   round-trip) and the run record a target leaves in its region, read
//!   and explained after the target scribbled on its sections.
//! - `campaign_file`: any bytes given as a saved campaign are either a
//!   campaign or an error, never a panic.
//! - `finding_file`: a damaged `finding.json` is read by the summary
//!   reader, the HTML report, SARIF and JUnit without a panic, and what
//!   they write stays well-formed (no markup from the file gets through).
//! - `guest_elf`: a scribbled ELF is loaded or refused by the emulator's
//!   loader, the KVM executor's check and the catalog readers, never with
//!   a panic.
//! - `wasm_module`: a scribbled module is loaded (rewritten, instrumented,
//!   its catalog read) or refused with a one-line error.
//! - `history`: `dst-oracles`' history readers (Jepsen, EDN, JSON lines)
//!   over damaged logs, then the checker on what parses.
//! - `libfuzzer_flags`: libFuzzer's command line and `.options` files.
//! - `throughput`: an empty target, to measure the explorer's own cost.
//!
//! Every target starts from a valid input of its parser and damages it
//! with [`scribble`], so that most runs get past the first check; its
//! regression corpus is committed under `fuzz/corpus/NAME`, and `.ci/run`
//! runs `cargo dst-fuzz ci` over each.

/// Damages `bytes` as a crash or a hostile writer would: up to `edits`
/// overwritten runs of 1 to 8 bytes (random, or bytes from `alphabet`
/// when it is not empty), sometimes a cut. Every choice is a decision.
pub fn scribble(bytes: &mut Vec<u8>, edits: u64, alphabet: &[u8]) {
    for _ in 0..dst::random::below(edits + 1) {
        if bytes.is_empty() {
            break;
        }
        let at = dst::random::below(bytes.len() as u64) as usize;
        let end = (at + 1 + dst::random::below(8) as usize).min(bytes.len());
        if alphabet.is_empty() {
            dst::random::fill(&mut bytes[at..end]);
        } else {
            for byte in &mut bytes[at..end] {
                *byte = *dst::random::choose(alphabet).expect("the alphabet is not empty");
            }
        }
    }
    if dst::random::below(8) == 0 {
        let keep = dst::random::below(bytes.len() as u64 + 1) as usize;
        bytes.truncate(keep);
    }
}

/// [`scribble`] on a text: the damaged bytes, lossily as UTF-8.
pub fn scribble_text(text: &str, edits: u64, alphabet: &[u8]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    scribble(&mut bytes, edits, alphabet);
    String::from_utf8_lossy(&bytes).into_owned()
}
