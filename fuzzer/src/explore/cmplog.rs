//! Input-to-state, as AFL++'s cmplog stage: the comparisons a target made
//! (`dst::cmplog`, read through `Executor::comparisons`) tell where the
//! input holds one operand of a check, and writing the other operand there
//! passes the check: a 4-byte magic compared by `memcmp`, a version field,
//! a length compared with a constant.
//!
//! [`InputToStateStage`] runs once per corpus entry (AFL++ does the same):
//! it reruns the entry with `FLAG_CMPLOG` to log its comparisons, then tries every
//! replacement of every comparison at each place the operand occurs
//! ([`replacements`]; integers also big-endian, at each narrower width both
//! values fit in, and off by one, since the log does not say whether the
//! check was `<`, `==` or `>`), each as one execution, at most [`BUDGET`].
//! Deterministic rather than a random mutator: with a random pick of
//! comparison, place and stacking (LibAFL's `I2SRandReplace` inside havoc)
//! the harness of `examples/libfuzzer/magic.c` was not solved in 60,000
//! executions, because one wrong replacement stacked on the right one (the
//! length field rewritten to 7) undoes it. Written here rather than taken
//! from LibAFL 0.16.1 also because its `I2SRandReplace` copies 8 bytes into
//! the 4-byte match of a 32-bit comparison and panics.
//!
//! The client runs the stage only for targets whose last run logged
//! comparisons, so other campaigns draw the same random numbers as before.

use std::borrow::Cow;

use dst::cmplog::{Entry, KIND_BYTES, KIND_INT, MAX_BYTES};
use dst::decision::{Kind, SEED_BYTES};
use libafl::fuzzer::Evaluator;
use libafl::inputs::BytesInput;
use libafl::stages::Stage;
use libafl::state::HasCurrentTestcase;
use libafl::{Error, HasMetadata};
use libafl_bolts::Named;

use super::State;
use crate::explore::feedback::SharedTarget;

/// Executions one corpus entry's comparisons may spend.
pub const BUDGET: usize = 256;
/// Places one operand is replaced at, per replacement.
const PLACES: usize = 4;

/// One comparison: its operands (integers in little-endian bytes of their
/// width), whether the first is a constant, whether they are integers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Comparison {
    pub first: Vec<u8>,
    pub second: Vec<u8>,
    pub first_is_const: bool,
    pub int: bool,
}

/// A run's log, without repeats, malformed entries and equal operands.
pub fn comparisons(entries: &[Entry]) -> Vec<Comparison> {
    let mut list = Vec::new();
    // Repeats found by hash, not by a scan of the list (quadratic in a log
    // of thousands: a twentieth of a parser harness's time).
    let mut seen = std::collections::HashSet::new();
    for e in entries {
        let len = e.len as usize;
        let int = e.kind == KIND_INT;
        let well_formed = (int && matches!(len, 1 | 2 | 4 | 8))
            || (e.kind == KIND_BYTES && (1..=MAX_BYTES).contains(&len));
        if !well_formed {
            continue;
        }
        let c = Comparison {
            first: e.first[..len].to_vec(),
            second: e.second[..len].to_vec(),
            first_is_const: e.first_is_const != 0,
            int,
        };
        if c.first != c.second && seen.insert(c.clone()) {
            list.push(c);
        }
    }
    list
}

/// The (look for, write instead) pairs of one comparison, in the order to
/// try them: the operand that is not a constant replaced by the other;
/// integers also big-endian, off by one, and at every narrower width both
/// values fit in (a 16-bit field compared as a 32-bit `int`, a length field
/// compared as a `size_t`), widest first.
pub fn replacements(c: &Comparison) -> Vec<(Vec<u8>, Vec<u8>)> {
    debug_assert_eq!(c.first.len(), c.second.len());
    let mut one = vec![(c.second.clone(), c.first.clone())];
    if !c.first_is_const {
        one.push((c.first.clone(), c.second.clone()));
    }
    if !c.int {
        return one;
    }
    let value = |v: &[u8]| v.iter().rev().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
    let fits = |v: u64, width: usize| width >= 8 || v >> (8 * width) == 0;
    let mut pairs = Vec::new();
    let mut width = c.first.len();
    while width >= 1 {
        for (needle, replacement) in &one {
            let (n, r) = (value(needle), value(replacement));
            if !fits(n, width) || !fits(r, width) {
                continue;
            }
            for r in [Some(r), r.checked_add(1), r.checked_sub(1)]
                .into_iter()
                .flatten()
            {
                if !fits(r, width) {
                    continue;
                }
                let le = |v: u64| v.to_le_bytes()[..width].to_vec();
                let be = |v: u64| v.to_be_bytes()[8 - width..].to_vec();
                let pair = (le(n), le(r));
                if !pairs.contains(&pair) {
                    pairs.push(pair);
                }
                let pair = (be(n), be(r));
                if width > 1 && !pairs.contains(&pair) {
                    pairs.push(pair);
                }
            }
        }
        width /= 2;
    }
    pairs
}

/// Where `needle` occurs in `bytes[from..]` (overlapping places too), at
/// most `max` places. memchr's searcher: a byte-by-byte comparison at
/// every place was a seventh of a real harness's time (expat).
fn places(bytes: &[u8], from: usize, needle: &[u8], max: usize) -> Vec<usize> {
    if needle.is_empty() || bytes.len() < from + needle.len() {
        return Vec::new();
    }
    let finder = memchr::memmem::Finder::new(needle);
    let mut found = Vec::new();
    let mut at = from;
    while found.len() < max
        && let Some(i) = finder.find(&bytes[at..])
    {
        found.push(at + i);
        at += i + 1;
    }
    debug_assert!(found.iter().all(|&i| bytes[i..].starts_with(needle)));
    found
}

/// The inputs one entry's comparisons suggest, at most `budget`.
pub fn candidates(input: &[u8], comparisons: &[Comparison], budget: usize) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    // Each candidate differs from the input in one place: (place, bytes)
    // names it, so repeats are found without comparing whole inputs (that
    // was a tenth of a fast harness's time).
    let mut seen = std::collections::HashSet::new();
    for c in comparisons {
        for (needle, replacement) in replacements(c) {
            for at in places(input, SEED_BYTES, &needle, PLACES) {
                if out.len() == budget {
                    return out;
                }
                let end = at + replacement.len();
                if input[at..end] != replacement[..] && seen.insert((at, replacement.clone())) {
                    let mut m = input.to_vec();
                    m[at..end].copy_from_slice(&replacement);
                    out.push(m);
                }
            }
        }
    }
    out
}

/// Marks a corpus entry whose comparisons were tried.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct ComparisonsTried;
libafl_bolts::impl_serdeany!(ComparisonsTried);

/// Reruns each new corpus entry, then runs what its comparisons suggest.
pub(super) struct InputToStateStage {
    target: SharedTarget,
}

impl InputToStateStage {
    pub fn new(target: SharedTarget) -> InputToStateStage {
        InputToStateStage { target }
    }
}

impl Named for InputToStateStage {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("InputToStateStage");
        &NAME
    }
}

impl<E, EM, Z> Stage<E, EM, State, Z> for InputToStateStage
where
    Z: Evaluator<E, EM, BytesInput, State>,
{
    fn perform(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut State,
        manager: &mut EM,
    ) -> Result<(), Error> {
        {
            let mut testcase = state.current_testcase_mut()?;
            if testcase.has_metadata::<ComparisonsTried>() {
                return Ok(());
            }
            testcase.add_metadata(ComparisonsTried);
        }
        let mut input = state.current_input_cloned()?.as_ref().to_vec();
        let (logged, lengths) = {
            let mut target = self.target.borrow_mut();
            target.end = None;
            let flags = target.exec.flags();
            target.exec.set_flags(flags | dst::region::FLAG_CMPLOG);
            let end = target.exec.execute(&input);
            target.exec.set_flags(flags);
            target.end = Some(end);
            let decisions = target.exec.region().decisions();
            let used = decisions
                .iter()
                .map(|d| d.offset as usize + usize::from(d.width));
            // The operands may come from the input's random tail: write out
            // the bytes the run read, so they can be found and replaced.
            crate::explore::mutators::ensure_explicit(&mut input, used.max().unwrap_or(0));
            let lengths: Vec<(usize, u64)> = decisions
                .iter()
                .filter(|d| d.kind == Kind::Length as u8 && d.width == 4)
                .map(|d| (SEED_BYTES + d.offset as usize, d.value))
                .collect();
            (comparisons(&target.exec.comparisons()), lengths)
        };
        // A harness's length is its bytes modulo the longest input: write
        // the length itself, so a comparison with it finds it (same run).
        for (at, value) in lengths {
            debug_assert!(at + 4 <= input.len(), "the run read its length");
            let value = u32::try_from(value).unwrap_or(u32::MAX);
            input[at..at + 4].copy_from_slice(&value.to_be_bytes());
        }
        for candidate in candidates(&input, &logged, BUDGET) {
            fuzzer.evaluate_input(state, executor, manager, &BytesInput::new(candidate))?;
        }
        Ok(())
    }
}

super::always_restartable!(InputToStateStage);

#[cfg(test)]
mod tests {
    use super::*;

    fn int(first: u64, second: u64, width: usize, first_is_const: bool) -> Comparison {
        Comparison {
            first: first.to_le_bytes()[..width].to_vec(),
            second: second.to_le_bytes()[..width].to_vec(),
            first_is_const,
            int: true,
        }
    }

    #[test]
    fn integers_are_also_replaced_big_endian_off_by_one_and_at_the_widths_they_fit() {
        // `size > 7` on a size_t of 8: also as the u32 a length field holds.
        let pairs = replacements(&int(7, 8, 8, true));
        assert_eq!(
            pairs[0],
            (vec![8, 0, 0, 0, 0, 0, 0, 0], vec![7, 0, 0, 0, 0, 0, 0, 0])
        );
        assert!(pairs.contains(&(vec![0, 0, 0, 8], vec![0, 0, 0, 7])));
        assert!(
            pairs.contains(&(vec![0, 0, 0, 8], vec![0, 0, 0, 6])),
            "off by one"
        );
        assert!(pairs.contains(&(vec![8], vec![7])));
        assert!(
            !pairs.iter().any(|(n, _)| n.contains(&7)),
            "a constant is not looked for"
        );
        // A 16-bit field compared as an int: 0x9b9b does not fit in a byte.
        let pairs = replacements(&int(0x0302, 0x9b9b, 4, true));
        assert!(pairs.contains(&(vec![0x9b, 0x9b], vec![0x02, 0x03])));
        assert!(
            pairs
                .iter()
                .all(|(n, r)| n.len() >= 2 && n.len() == r.len())
        );
        // Either operand of two variables; byte strings as they are.
        let pairs = replacements(&int(3, 9, 1, false));
        assert!(pairs.contains(&(vec![9], vec![3])) && pairs.contains(&(vec![3], vec![9])));
        let bytes = Comparison {
            first: b"abcd".to_vec(),
            second: b"DST!".to_vec(),
            first_is_const: false,
            int: false,
        };
        assert_eq!(replacements(&bytes).len(), 2);
    }

    #[test]
    fn candidates_write_the_other_operand_where_the_input_holds_one() {
        let mut input = vec![0u8; SEED_BYTES];
        input.extend_from_slice(b"\0\0\0\x0cabcd\x9b\x9b\x8e\x9babcd");
        let magic = Comparison {
            first: b"abcd".to_vec(),
            second: b"DST!".to_vec(),
            first_is_const: false,
            int: false,
        };
        let out = candidates(&input, &[magic, int(0x0302, 0x9b9b, 4, true)], BUDGET);
        let data = |c: &Vec<u8>| c[SEED_BYTES + 4..].to_vec();
        assert!(out.iter().any(|c| data(c) == b"DST!\x9b\x9b\x8e\x9babcd"));
        assert!(
            out.iter().any(|c| data(c) == b"abcd\x9b\x9b\x8e\x9bDST!"),
            "each place"
        );
        assert!(out.iter().any(|c| data(c) == b"abcd\x02\x03\x8e\x9babcd"));
        assert!(
            out.iter().all(|c| c[..SEED_BYTES] == input[..SEED_BYTES]),
            "seed untouched"
        );
        assert_eq!(
            candidates(&input, &[int(1, 2, 1, true)], BUDGET),
            Vec::<Vec<u8>>::new()
        );
        assert_eq!(
            candidates(&input, &[magic_of(&input)], 1).len(),
            1,
            "budget"
        );
    }

    fn magic_of(input: &[u8]) -> Comparison {
        Comparison {
            first: input[SEED_BYTES + 4..SEED_BYTES + 8].to_vec(),
            second: b"DST!".to_vec(),
            first_is_const: false,
            int: false,
        }
    }
}
