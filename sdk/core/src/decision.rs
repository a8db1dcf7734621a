//! How a decision's bytes become its value (the table in `dst::decision`'s
//! docs), and reading the decision stream where its tail was written out
//! ahead ([`take`], a guest's case).

/// Bytes of the tail seed at the start of every input.
pub const SEED_BYTES: usize = 8;
/// A fault byte at or above this value fires the fault.
pub const FAULT_THRESHOLD: u8 = 0xF0;

/// What a decision was for; stored as `u8` in `DecisionRecord::kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
#[repr(u8)]
pub enum Kind {
    U64 = 1,
    Below = 2,
    Bool = 3,
    Choose = 4,
    Fill = 5,
    Fault = 6,
    RngU32 = 7,
    RngU64 = 8,
    RngFill = 9,
    /// Which runnable thread runs next (0: the current one keeps running).
    Schedule = 10,
    /// The scheduling strategy of a run (0: direct choices).
    Strategy = 11,
    /// A thread's priority (PCT, POS) or a site's (site priorities).
    Priority = 12,
    /// Where a PCT priority change point falls among the run's contested
    /// steps (two bytes: a fraction of the expected count).
    Change = 13,
    /// The length of the buffer decided next (a libFuzzer harness's input).
    Length = 14,
    /// The contested steps a PCT run expects (one byte, `dst::decision::steps_of`); the
    /// explorer writes the last run's count here (`dst::decision::steps_code`).
    Steps = 15,
}

impl Kind {
    pub fn from_u8(byte: u8) -> Option<Kind> {
        use Kind::*;
        Some(match byte {
            1 => U64,
            2 => Below,
            3 => Bool,
            4 => Choose,
            5 => Fill,
            6 => Fault,
            7 => RngU32,
            8 => RngU64,
            9 => RngFill,
            10 => Schedule,
            11 => Strategy,
            12 => Priority,
            13 => Change,
            14 => Length,
            15 => Steps,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        use Kind::*;
        match self {
            U64 => "u64",
            Below => "below",
            Bool => "bool",
            Choose => "choose",
            Fill => "fill",
            Fault => "fault",
            RngU32 => "rng_u32",
            RngU64 => "rng_u64",
            RngFill => "rng_fill",
            Schedule => "schedule",
            Strategy => "strategy",
            Priority => "priority",
            Change => "change",
            Length => "length",
            Steps => "steps",
        }
    }
}

/// Bytes a `below(n)` decision consumes.
#[inline]
pub fn below_width(n: u64) -> usize {
    if n <= 1 {
        0
    } else {
        (64 - (n - 1).leading_zeros() as usize).div_ceil(8)
    }
}

/// Big-endian value of up to 8 bytes.
#[inline]
pub fn be_value(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |v, &b| v << 8 | u64::from(b))
}

/// How a decision's bytes become its value. Data rather than a closure, so
/// that a decision taken for code in another address space (the SDK inside
/// a wasm module, through the wasm executor) is described by two numbers
/// ([`Value::encode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// The bytes, big-endian ([`be_value`]).
    Be,
    /// The big-endian bytes modulo `n` (`n > 0`).
    Mod(u64),
    /// The lowest bit of the first byte.
    Bit,
    /// 1 if the first byte is at least the threshold, else 0.
    AtLeast(u8),
    /// The bytes' hash (a buffer fill, recorded by its [`crate::hash::fill64`]).
    Hash,
}

impl Value {
    /// A fault's rule: it fires when its byte is at least
    /// [`FAULT_THRESHOLD`].
    pub const FAULT: Value = Value::AtLeast(FAULT_THRESHOLD);

    /// The value of a decision that consumed `bytes`.
    #[inline]
    pub fn of(self, bytes: &[u8]) -> u64 {
        match self {
            Value::Be => be_value(bytes),
            Value::Mod(n) => {
                debug_assert!(n > 0, "a modulus is positive");
                be_value(bytes) % n.max(1)
            }
            Value::Bit => u64::from(bytes.first().is_some_and(|b| b & 1 != 0)),
            Value::AtLeast(threshold) => u64::from(bytes.first().is_some_and(|b| *b >= threshold)),
            Value::Hash => crate::hash::fill64(bytes),
        }
    }

    /// As (tag, parameter), the inverse of [`Value::decode`].
    pub fn encode(self) -> (u32, u64) {
        match self {
            Value::Be => (0, 0),
            Value::Mod(n) => (1, n),
            Value::Bit => (2, 0),
            Value::AtLeast(t) => (3, u64::from(t)),
            Value::Hash => (4, 0),
        }
    }

    /// The value function encoded as (tag, parameter), if it is one.
    pub fn decode(tag: u32, parameter: u64) -> Option<Value> {
        Some(match (tag, parameter) {
            (0, _) => Value::Be,
            (1, n) if n > 0 => Value::Mod(n),
            (2, _) => Value::Bit,
            (3, t) => Value::AtLeast(u8::try_from(t).ok()?),
            (4, _) => Value::Hash,
            _ => return None,
        })
    }
}

/// The `width` bytes of the decision stream at `cursor`, read into `out`:
/// the input's explicit bytes (`explicit`, the input after its seed),
/// then the tail (`tail`, written out ahead by whoever generated it).
/// `false`, with `out` untouched, when they run past the tail given.
pub fn take(explicit: &[u8], tail: &[u8], cursor: u64, out: &mut [u8]) -> bool {
    let end = cursor.saturating_add(out.len() as u64);
    if end > (explicit.len() + tail.len()) as u64 {
        return false;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        let at = cursor as usize + i;
        *byte = match explicit.get(at) {
            Some(&b) => b,
            None => tail[at - explicit.len()],
        };
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_the_explicit_bytes_then_the_tail() {
        let mut out = [0u8; 4];
        assert!(take(&[1, 2], &[3, 4, 5], 0, &mut out));
        assert_eq!(out, [1, 2, 3, 4]);
        let mut out = [0u8; 2];
        assert!(take(&[1, 2], &[3, 4, 5], 3, &mut out));
        assert_eq!(out, [4, 5]);
        assert!(!take(&[1, 2], &[3, 4, 5], 4, &mut out), "past the tail");
        assert_eq!(out, [4, 5], "untouched");
    }

    #[test]
    fn values_of_bytes() {
        assert_eq!(below_width(1), 0);
        assert_eq!(below_width(256), 1);
        assert_eq!(below_width(257), 2);
        assert_eq!(Value::Mod(10).of(&[0, 25]), 5);
        assert_eq!(Value::AtLeast(FAULT_THRESHOLD).of(&[0xF0]), 1);
        assert_eq!(Value::Bit.of(&[3]), 1);
        assert_eq!(Value::decode(1, 7), Some(Value::Mod(7)));
        assert_eq!(Value::decode(1, 0), None, "no zero modulus");
    }
}
