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
//! Where the entry's bytes are a harness's buffer (fill decisions), the
//! places come first from *colorization*, as AFL++'s RedQueen: the bytes
//! are replaced by others of their class as far as the run keeps its path
//! ([`path_hash`]), the colored input's comparisons are logged too, and an
//! operand that changed with the coloring is at the place where the
//! colored input holds its colored value and the entry its original one.
//! That is exact where the operand's bytes are common (a version field of
//! `1c 1c` in a buffer full of `1c`: the first [`PLACES`] places were all
//! elsewhere), and those replacements are also tried in pairs (two fields
//! checked in one merged branch pass only together). On libpcap's harness
//! about one 30 s campaign in three stayed at 39-75 edges behind its
//! version check without this; with it none of twelve did
//! (docs/benchmarks.md).
//!
//! The client runs the stage only for targets whose last run logged
//! comparisons, so other campaigns draw the same random numbers as before.

use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::Range;

use dst::cmplog::{Entry, KIND_BYTES, KIND_INT, MAX_BYTES};
use dst::decision::{Kind, SEED_BYTES, Value};
use libafl::fuzzer::{Evaluator, ExecutesInput};
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
#[cfg(test)]
pub fn candidates(input: &[u8], comparisons: &[Comparison], budget: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    candidates_into(input, comparisons, budget, &mut out, &mut HashSet::new());
    out
}

/// [`candidates`], appended to `out` (up to `budget` in all); `seen`
/// names the candidates already there by (place, bytes).
fn candidates_into(
    input: &[u8],
    comparisons: &[Comparison],
    budget: usize,
    out: &mut Vec<Vec<u8>>,
    seen: &mut HashSet<(usize, Vec<u8>)>,
) {
    // Each candidate differs from the input in one place: (place, bytes)
    // names it, so repeats are found without comparing whole inputs (that
    // was a tenth of a fast harness's time).
    for c in comparisons {
        for (needle, replacement) in replacements(c) {
            for at in places(input, SEED_BYTES, &needle, PLACES) {
                if out.len() >= budget {
                    return;
                }
                push_candidate(input, at, &replacement, out, seen);
            }
        }
    }
}

/// Adds `input` with `bytes` written at `at` to `out`, unless it is the
/// input itself or already there.
fn push_candidate(
    input: &[u8],
    at: usize,
    bytes: &[u8],
    out: &mut Vec<Vec<u8>>,
    seen: &mut HashSet<(usize, Vec<u8>)>,
) {
    let end = at + bytes.len();
    debug_assert!(end <= input.len());
    if input[at..end] != bytes[..] && seen.insert((at, bytes.to_vec())) {
        let mut m = input.to_vec();
        m[at..end].copy_from_slice(bytes);
        out.push(m);
    }
}

/// A byte of the same class as `b` (digit, lower or upper case letter,
/// white space, other printable, other), and not `b` where the class has
/// another: colorization keeps a text parser on its path.
fn same_class(b: u8, r: u64) -> u8 {
    let pick = |set: &[u8]| {
        let i = (r % set.len() as u64) as usize;
        if set[i] == b {
            set[(i + 1) % set.len()]
        } else {
            set[i]
        }
    };
    match b {
        b'0'..=b'9' => pick(b"0123456789"),
        b'a'..=b'z' => pick(b"abcdefghijklmnopqrstuvwxyz"),
        b'A'..=b'Z' => pick(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
        b' ' | b'\t' | b'\r' | b'\n' => pick(b" \t\r\n"),
        0x21..=0x7e => pick(b"!#$%&*+,-./:;=?@^_|~"),
        _ => {
            let c = (r >> 8) as u8;
            if c == b { c ^ 0x80 } else { c }
        }
    }
}

/// Inputs from the places where colorization shows an operand comes from:
/// `orig` and `colored` took the same path, `orig_log` and `colored_log`
/// are their comparisons in order. An operand that differs between the two
/// runs comes from the input; where `colored` holds its colored value and
/// `orig` its original value (at a width both fit, in either byte order),
/// the other operand is written into `orig`: exactly the place a check
/// reads, however often its bytes occur elsewhere (AFL++'s RedQueen).
fn tainted_candidates(
    orig: &[u8],
    colored: &[u8],
    orig_log: &[Entry],
    colored_log: &[Entry],
    budget: usize,
    out: &mut Vec<Vec<u8>>,
    seen: &mut HashSet<(usize, Vec<u8>)>,
) {
    debug_assert_eq!(orig.len(), colored.len());
    let value = |v: &[u8]| v.iter().rev().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
    let fits = |v: u64, width: usize| width >= 8 || v >> (8 * width) == 0;
    let mut exact: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut near = Vec::new();
    for (a, b) in orig_log.iter().zip(colored_log) {
        let len = usize::from(a.len);
        if a.kind != b.kind || a.len != b.len || len == 0 || len > MAX_BYTES {
            continue;
        }
        let sides = [
            (
                &a.first[..len],
                &b.first[..len],
                &a.second[..len],
                a.first_is_const != 0,
            ),
            (&a.second[..len], &b.second[..len], &a.first[..len], false),
        ];
        for (o, c, other, constant) in sides {
            if constant || o == c || o == other {
                continue;
            }
            if a.kind != KIND_INT {
                for at in places(colored, SEED_BYTES, c, PLACES) {
                    if orig[at..].starts_with(o) {
                        exact.push((at, other.to_vec()));
                    }
                }
                continue;
            }
            let (o, c, r) = (value(o), value(c), value(other));
            let mut width = len;
            while width >= 1 {
                if fits(o, width) && fits(c, width) && fits(r, width) {
                    let le = |v: u64| v.to_le_bytes()[..width].to_vec();
                    let be = |v: u64| v.to_be_bytes()[8 - width..].to_vec();
                    let orders: &[&dyn Fn(u64) -> Vec<u8>] =
                        if width > 1 { &[&le, &be] } else { &[&le] };
                    for enc in orders {
                        let needle = enc(c);
                        for at in places(colored, SEED_BYTES, &needle, PLACES) {
                            if orig[at..at + width] != enc(o)[..] {
                                continue;
                            }
                            exact.push((at, enc(r)));
                            for n in [r.checked_add(1), r.checked_sub(1)].into_iter().flatten() {
                                if fits(n, width) {
                                    near.push((at, enc(n)));
                                }
                            }
                        }
                    }
                }
                width /= 2;
            }
        }
    }
    exact.extend(near);
    // In order, without repeats (a set: a parser's log gives thousands).
    let mut kept = HashSet::new();
    let singles: Vec<(usize, Vec<u8>)> = exact
        .into_iter()
        .filter(|(at, bytes)| {
            orig[*at..*at + bytes.len()] != bytes[..] && kept.insert((*at, bytes.clone()))
        })
        .collect();
    for (at, bytes) in &singles {
        if out.len() >= budget {
            return;
        }
        push_candidate(orig, *at, bytes, out, seen);
    }
    // Two replacements at once, at places that do not overlap: checks of
    // two fields that the compiler merged into one branch (libpcap's
    // version, major and minor) pass only together. The earlier (exact)
    // replacements are paired first.
    let first = singles.len().min(PAIRED);
    let mut pairs: Vec<(usize, usize)> = (0..first)
        .flat_map(|i| (i + 1..first).map(move |j| (i, j)))
        .filter(|&(i, j)| {
            let (a, b) = (&singles[i], &singles[j]);
            a.0 + a.1.len() <= b.0 || b.0 + b.1.len() <= a.0
        })
        .collect();
    pairs.sort_by_key(|&(i, j)| i + j);
    for (i, j) in pairs {
        if out.len() >= budget {
            return;
        }
        let (a, b) = (&singles[i], &singles[j]);
        let mut m = orig.to_vec();
        m[a.0..a.0 + a.1.len()].copy_from_slice(&a.1);
        m[b.0..b.0 + b.1.len()].copy_from_slice(&b.1);
        out.push(m);
    }
}

/// Single replacements of [`tainted_candidates`] that are also paired.
const PAIRED: usize = 12;

/// The path of the run that just ended: a hash of its edge map's hit
/// classes (equal paths, equal hashes).
fn path_hash(map: &[u8]) -> u64 {
    const BLOCK: usize = 64;
    use dst::hash::{FNV64_OFFSET, FNV64_PRIME};
    let mut h = FNV64_OFFSET;
    let mut add = |at: usize, bytes: &[u8]| {
        for (j, &b) in bytes.iter().enumerate() {
            if b != 0 {
                let class = crate::explore::feedback::count_class(b);
                h = (h ^ ((at + j) as u64) << 8 ^ u64::from(class)).wrapping_mul(FNV64_PRIME);
            }
        }
    };
    // Most of a map is zero: blocks of it are skipped by one vectorized
    // test (a colorization run hashes the whole map).
    let mut blocks = map.chunks_exact(BLOCK);
    for (i, block) in (&mut blocks).enumerate() {
        if block.iter().fold(0u8, |acc, &b| acc | b) != 0 {
            add(i * BLOCK, block);
        }
    }
    let rest = blocks.remainder();
    add(map.len() - rest.len(), rest);
    h
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
    Z: Evaluator<E, EM, BytesInput, State> + ExecutesInput<E, EM, BytesInput, State>,
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
        let (log, lengths, fills, path) = {
            let mut target = self.target.borrow_mut();
            let log = self.logged_run(&mut target, &input);
            let path = path_hash(edges(&mut target));
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
            let fills: Vec<Range<usize>> = decisions
                .iter()
                .filter(|d| d.kind == Kind::Fill as u8 && d.width > 0)
                .map(|d| {
                    let at = SEED_BYTES + d.offset as usize;
                    at..at + usize::from(d.width)
                })
                .collect();
            (log, lengths, fills, path)
        };
        // A harness's length is its bytes modulo the longest input: write
        // the length itself, so a comparison with it finds it (same run).
        for &(at, value) in &lengths {
            debug_assert!(at + 4 <= input.len(), "the run read its length");
            let value = u32::try_from(value).unwrap_or(u32::MAX);
            input[at..at + 4].copy_from_slice(&value.to_be_bytes());
        }
        let logged = comparisons(&log);
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        if !logged.is_empty() && !fills.is_empty() {
            let colored = self.colorize(fuzzer, executor, state, manager, &input, fills, path)?;
            if colored != input {
                let colored_log = self.logged_run(&mut self.target.borrow_mut(), &colored);
                tainted_candidates(
                    &input,
                    &colored,
                    &log,
                    &colored_log,
                    BUDGET,
                    &mut out,
                    &mut seen,
                );
            }
        }
        candidates_into(&input, &logged, BUDGET, &mut out, &mut seen);
        // A replacement of the first buffer's length keeps within the
        // length control's cap, as mutations do.
        if let Some(&(at, _)) = lengths.first()
            && let Some(limit) = crate::explore::mutators::buffer_limit(state)
        {
            let modulus = state
                .metadata::<crate::explore::mutators::LengthControl>()
                .map_or(u64::MAX, |c| c.max_len as u64 + 1);
            out.retain(|c| {
                c.get(at..at + 4)
                    .is_none_or(|l| Value::Mod(modulus).of(l) <= limit as u64)
            });
        }
        for candidate in out {
            fuzzer.evaluate_input(state, executor, manager, &BytesInput::new(candidate))?;
        }
        Ok(())
    }
}

/// The edge map of `target`'s runs.
fn edges(target: &mut crate::explore::feedback::Target) -> &mut [u8] {
    let map = target.exec.coverage().edges;
    // SAFETY: the executor's map stays at its address for the executor's
    // life (the `Executor` protocol) and no run is under way: only this
    // borrow of the target reads or writes it.
    unsafe { std::slice::from_raw_parts_mut(map.as_mut_ptr(), map.len()) }
}

/// Runs of colorization one corpus entry may spend: this many, one more
/// for every 8 bytes colored, at most [`COLOR_MAX`].
const COLOR_BUDGET: usize = 32;
const COLOR_MAX: usize = 256;

impl InputToStateStage {
    /// Runs `input` with its comparisons logged; returns the log.
    fn logged_run(
        &self,
        target: &mut crate::explore::feedback::Target,
        input: &[u8],
    ) -> Vec<Entry> {
        // Outside LibAFL's executor no observer clears the edge map.
        edges(target).fill(0);
        target.end = None;
        let flags = target.exec.flags();
        target.exec.set_flags(flags | dst::region::FLAG_CMPLOG);
        let end = target.exec.execute(input);
        target.exec.set_flags(flags);
        target.end = Some(end);
        target.exec.comparisons()
    }

    /// `input` with as many bytes of `ranges` replaced by others of their
    /// class as keep the run on the path `path` (AFL++'s colorization:
    /// a range that changes the path is halved, the larger ranges tried
    /// first; [`COLOR_BUDGET`] runs and one per 8 bytes, at most
    /// [`COLOR_MAX`]).
    #[allow(clippy::too_many_arguments)]
    fn colorize<E, EM, Z>(
        &self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut State,
        manager: &mut EM,
        input: &[u8],
        ranges: Vec<Range<usize>>,
        path: u64,
    ) -> Result<Vec<u8>, Error>
    where
        Z: ExecutesInput<E, EM, BytesInput, State>,
    {
        use libafl::executors::ExitKind;
        use libafl::state::HasRand;
        use libafl_bolts::rands::Rand;
        let mut colored = input.to_vec();
        let mut todo: std::collections::BinaryHeap<(usize, usize)> = ranges
            .into_iter()
            .filter(|r| r.end <= input.len())
            .map(|r| (r.len(), r.start))
            .collect();
        let mut runs = 0;
        let total: usize = todo.iter().map(|r| r.0).sum();
        let budget = (COLOR_BUDGET + total / 8).min(COLOR_MAX);
        while runs < budget
            && let Some((len, start)) = todo.pop()
        {
            let range = start..start + len;
            for b in &mut colored[range.clone()] {
                *b = same_class(*b, state.rand_mut().next());
            }
            runs += 1;
            let exit = fuzzer.execute_input(
                state,
                executor,
                manager,
                &BytesInput::new(colored.clone()),
            )?;
            let same =
                exit == ExitKind::Ok && path_hash(edges(&mut self.target.borrow_mut())) == path;
            if same {
                continue;
            }
            colored[range.clone()].copy_from_slice(&input[range]);
            if len > 1 {
                let half = len / 2;
                todo.push((half, start));
                todo.push((len - half, start + half));
            }
        }
        Ok(colored)
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

    fn entry(first: u64, second: u64, len: u8, first_is_const: bool) -> Entry {
        let mut e = Entry {
            kind: KIND_INT,
            len,
            first_is_const: u8::from(first_is_const),
            _reserved: [0; 5],
            first: [0; MAX_BYTES],
            second: [0; MAX_BYTES],
        };
        e.first[..8].copy_from_slice(&first.to_le_bytes());
        e.second[..8].copy_from_slice(&second.to_le_bytes());
        e
    }

    #[test]
    fn colorization_names_the_one_place_a_common_operand_comes_from() {
        // A buffer full of 0x1c with two big-endian 16-bit fields at 10 and
        // 12, checked as ints (major == 2, minor <= 4): their bytes occur
        // everywhere, so the untainted search's first places are elsewhere.
        let mut orig = vec![0u8; SEED_BYTES];
        orig.extend_from_slice(&[0x1c; 40]);
        let major = SEED_BYTES + 10;
        let minor = SEED_BYTES + 12;
        let mut colored = orig.clone();
        for (i, b) in colored[SEED_BYTES..].iter_mut().enumerate() {
            *b = 0x40 + i as u8; // every byte colored
        }
        let field =
            |bytes: &[u8], at: usize| u64::from(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
        let orig_log = [
            entry(2, field(&orig, major), 4, true),
            entry(5, field(&orig, minor), 4, true),
        ];
        let colored_log = [
            entry(2, field(&colored, major), 4, true),
            entry(5, field(&colored, minor), 4, true),
        ];
        let mut out = Vec::new();
        tainted_candidates(
            &orig,
            &colored,
            &orig_log,
            &colored_log,
            BUDGET,
            &mut out,
            &mut HashSet::new(),
        );
        let changed =
            |c: &Vec<u8>| -> Vec<usize> { (0..c.len()).filter(|&i| c[i] != orig[i]).collect() };
        assert_eq!(
            out[0][major..major + 2],
            [0, 2],
            "the exact value first, big-endian"
        );
        assert!(
            out.iter()
                .all(|c| changed(c).iter().all(|&i| (major..minor + 2).contains(&i))),
            "only the fields' places are written"
        );
        assert!(
            out.iter().any(|c| c[minor..minor + 2] == [0, 4]),
            "off by one"
        );
        assert!(
            out.iter()
                .any(|c| c[major..major + 2] == [0, 2] && c[minor..minor + 2] == [0, 4]),
            "both fields at once"
        );
        // The untainted search alone writes the first places of 1c 1c.
        let plain = candidates(&orig, &comparisons(&orig_log), BUDGET);
        assert!(!plain.iter().any(|c| c[major..major + 2] == [0, 2]));
        // An operand the coloring did not change says nothing.
        let mut out = Vec::new();
        tainted_candidates(
            &orig,
            &orig,
            &orig_log,
            &orig_log,
            BUDGET,
            &mut out,
            &mut HashSet::new(),
        );
        assert!(out.is_empty());
    }

    #[test]
    fn coloring_keeps_a_byte_in_its_class_and_paths_hash_by_hit_class() {
        for b in 0..=255u8 {
            for r in [0, 1, 7, 12345, u64::MAX] {
                let c = same_class(b, r);
                assert_ne!(c, b, "{b} is colored");
                let class = |x: u8| {
                    [
                        x.is_ascii_digit(),
                        x.is_ascii_lowercase(),
                        x.is_ascii_uppercase(),
                        b" \t\r\n".contains(&x),
                    ]
                };
                if b.is_ascii_graphic() || b" \t\r\n".contains(&b) {
                    assert_eq!(class(c), class(b), "{b} -> {c}");
                }
            }
        }
        let mut a = vec![0u8; 100];
        a[3] = 4;
        a[70] = 1;
        let mut b = a.clone();
        b[3] = 7; // the same class (4-7)
        assert_eq!(path_hash(&a), path_hash(&b));
        b[3] = 8;
        assert_ne!(path_hash(&a), path_hash(&b));
        let mut c = a.clone();
        c[71] = 1;
        assert_ne!(path_hash(&a), path_hash(&c));
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
