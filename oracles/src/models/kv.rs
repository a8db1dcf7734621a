//! A key-value map of strings: get, put, append; partitioned by key.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::format::{Completion, Decode};
use crate::hash_of;
use crate::model::Model;

/// An immutable string built for the kv model's states: appending shares
/// the prefix (a persistent list of chunks), and a polynomial hash is kept
/// up to date, so appending, cloning, hashing and comparing unequal texts
/// are O(1) whatever the length.
#[derive(Clone)]
pub struct Text(Arc<Chunk>);

struct Chunk {
    /// Length in bytes of the whole text.
    len: usize,
    /// Polynomial hash of the whole text: `sum(byte[i] * BASE^(len-1-i))`.
    hash: u64,
    /// The text before `tail`.
    prefix: Option<Text>,
    tail: Arc<str>,
}

const BASE: u64 = 0x100_0000_01b3;

fn poly_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |h, &b| {
        h.wrapping_mul(BASE).wrapping_add(u64::from(b) + 1)
    })
}

fn base_pow(mut exponent: usize) -> u64 {
    let (mut result, mut base) = (1u64, BASE);
    while exponent > 0 {
        if exponent & 1 == 1 {
            result = result.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exponent >>= 1;
    }
    result
}

impl Drop for Chunk {
    /// Drops long chains iteratively rather than recursively.
    fn drop(&mut self) {
        let mut next = self.prefix.take();
        while let Some(Text(chunk)) = next {
            next = Arc::into_inner(chunk).and_then(|mut c| c.prefix.take());
        }
    }
}

impl Text {
    pub fn len(&self) -> usize {
        self.0.len
    }

    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }

    /// `self` followed by `suffix`.
    pub fn concat(&self, suffix: &Text) -> Text {
        if suffix.is_empty() {
            return self.clone();
        }
        if self.is_empty() {
            return suffix.clone();
        }
        let tail: Arc<str> = if suffix.0.prefix.is_none() {
            suffix.0.tail.clone()
        } else {
            Arc::from(suffix.to_string())
        };
        Text(Arc::new(Chunk {
            len: self.0.len + suffix.0.len,
            hash: self
                .0
                .hash
                .wrapping_mul(base_pow(suffix.0.len))
                .wrapping_add(suffix.0.hash),
            prefix: Some(self.clone()),
            tail,
        }))
    }

    /// Orders by content (for [`KvState`]'s sorted keys).
    fn cmp_text(&self, other: &Text) -> std::cmp::Ordering {
        match (&self.0.prefix, &other.0.prefix) {
            (None, None) => self.0.tail.cmp(&other.0.tail),
            _ => self.to_string().cmp(&other.to_string()),
        }
    }

    /// The chunks, last first.
    fn chunks_rev(&self) -> impl Iterator<Item = &str> {
        std::iter::successors(Some(self), |t| t.0.prefix.as_ref()).map(|t| &*t.0.tail)
    }

    fn bytes_rev(&self) -> impl Iterator<Item = u8> + '_ {
        self.chunks_rev().flat_map(|c| c.bytes().rev())
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text::from(Arc::<str>::from(s))
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Text::from(Arc::<str>::from(s))
    }
}

impl From<Arc<str>> for Text {
    fn from(tail: Arc<str>) -> Self {
        Text(Arc::new(Chunk {
            len: tail.len(),
            hash: poly_hash(tail.as_bytes()),
            prefix: None,
            tail,
        }))
    }
}

impl Default for Text {
    fn default() -> Self {
        Text::from("")
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        if self.0.len != other.0.len || self.0.hash != other.0.hash {
            return false;
        }
        // Texts built by the same appends share chunks: compare chunk by
        // chunk from the end, stopping at a shared prefix.
        let (mut a, mut b) = (self, other);
        loop {
            if Arc::ptr_eq(&a.0, &b.0) {
                return true;
            }
            if a.0.tail.len() != b.0.tail.len() {
                break;
            }
            if !Arc::ptr_eq(&a.0.tail, &b.0.tail) && a.0.tail != b.0.tail {
                return false;
            }
            match (&a.0.prefix, &b.0.prefix) {
                (Some(pa), Some(pb)) => (a, b) = (pa, pb),
                (None, None) => return true,
                _ => break,
            }
        }
        // What is left of both has the same length.
        a.bytes_rev().eq(b.bytes_rev())
    }
}

impl Eq for Text {}

impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash ^ (self.0.len as u64).rotate_left(32));
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut chunks: Vec<&str> = self.chunks_rev().collect();
        chunks.reverse();
        chunks.into_iter().try_for_each(|c| f.write_str(c))
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Text::from)
    }
}

/// A key-value map where a missing key reads as the empty string (as in
/// Porcupine's kv model), partitioned by key: each key is checked on its own
/// and the state is that key's value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kv;

/// The same map without partitioning: one search over whole maps. Much
/// slower; for comparison (Porcupine's `kvNoPartitionModel`) and for
/// testing the checker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KvMap;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvInput {
    Get { key: Text },
    Put { key: Text, value: Text },
    Append { key: Text, value: Text },
}

impl KvInput {
    pub fn key(&self) -> &Text {
        match self {
            KvInput::Get { key } | KvInput::Put { key, .. } | KvInput::Append { key, .. } => key,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvOutput {
    /// What a get returned.
    Value(Text),
    /// A put or append.
    Ok,
}

/// The map: its non-empty entries sorted by key, shared, with a hash kept
/// up to date.
#[derive(Clone, Debug, Default)]
pub struct KvState {
    hash: u64,
    entries: Arc<[(Text, Text)]>,
}

impl KvState {
    pub fn get(&self, key: &Text) -> Option<&Text> {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    fn find(&self, key: &Text) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.cmp_text(key))
    }

    fn entry_hash(key: &Text, value: &Text) -> u64 {
        hash_of(key)
            .rotate_left(17)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ hash_of(value)
    }

    /// The map with `key` set to `value`.
    fn with(&self, key: &Text, value: Text) -> KvState {
        let mut entries: Vec<(Text, Text)> = Vec::with_capacity(self.entries.len() + 1);
        let mut hash = self.hash;
        match self.find(key) {
            Ok(i) => {
                hash ^= Self::entry_hash(key, &self.entries[i].1);
                entries.extend_from_slice(&self.entries[..i]);
                if !value.is_empty() {
                    hash ^= Self::entry_hash(key, &value);
                    entries.push((key.clone(), value));
                }
                entries.extend_from_slice(&self.entries[i + 1..]);
            }
            Err(i) => {
                if value.is_empty() {
                    return self.clone();
                }
                hash ^= Self::entry_hash(key, &value);
                entries.extend_from_slice(&self.entries[..i]);
                entries.push((key.clone(), value));
                entries.extend_from_slice(&self.entries[i..]);
            }
        }
        KvState {
            hash,
            entries: entries.into(),
        }
    }
}

impl PartialEq for KvState {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash
            && (Arc::ptr_eq(&self.entries, &other.entries) || self.entries == other.entries)
    }
}

impl Eq for KvState {}

impl Hash for KvState {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl Model for Kv {
    type State = Text;
    type Input = KvInput;
    type Output = KvOutput;

    fn init(&self) -> Text {
        Text::default()
    }

    fn step(&self, state: &Text, input: &KvInput, output: Option<&KvOutput>) -> Option<Text> {
        match (input, output) {
            (KvInput::Get { .. }, None) => Some(state.clone()),
            (KvInput::Get { .. }, Some(KvOutput::Value(v))) => (state == v).then(|| state.clone()),
            (KvInput::Put { value, .. }, None | Some(KvOutput::Ok)) => Some(value.clone()),
            (KvInput::Append { value, .. }, None | Some(KvOutput::Ok)) => Some(state.concat(value)),
            _ => None,
        }
    }

    fn partition(&self, input: &KvInput) -> Option<String> {
        Some(input.key().to_string())
    }

    fn describe_input(&self, input: &KvInput) -> String {
        describe_input(input)
    }

    fn describe_output(&self, output: &KvOutput) -> String {
        describe_output(output)
    }
}

impl Model for KvMap {
    type State = KvState;
    type Input = KvInput;
    type Output = KvOutput;

    fn init(&self) -> KvState {
        KvState::default()
    }

    fn step(&self, state: &KvState, input: &KvInput, output: Option<&KvOutput>) -> Option<KvState> {
        let empty = || Text::default();
        match (input, output) {
            (KvInput::Get { .. }, None) => Some(state.clone()),
            (KvInput::Get { key }, Some(KvOutput::Value(v))) => {
                let matches = match state.get(key) {
                    Some(current) => current == v,
                    None => v.is_empty(),
                };
                matches.then(|| state.clone())
            }
            (KvInput::Put { key, value }, None | Some(KvOutput::Ok)) => {
                Some(state.with(key, value.clone()))
            }
            (KvInput::Append { key, value }, None | Some(KvOutput::Ok)) => {
                let current = state.get(key).cloned().unwrap_or_else(empty);
                Some(state.with(key, current.concat(value)))
            }
            _ => None,
        }
    }

    fn describe_input(&self, input: &KvInput) -> String {
        describe_input(input)
    }

    fn describe_output(&self, output: &KvOutput) -> String {
        describe_output(output)
    }
}

fn describe_input(input: &KvInput) -> String {
    match input {
        KvInput::Get { key } => format!("get({key:?})"),
        KvInput::Put { key, value } => format!("put({key:?}, {value:?})"),
        KvInput::Append { key, value } => format!("append({key:?}, {value:?})"),
    }
}

fn describe_output(output: &KvOutput) -> String {
    match output {
        KvOutput::Value(v) => format!("{v:?}"),
        KvOutput::Ok => "ok".into(),
    }
}

fn text(value: &Value, what: &str) -> Result<Text, String> {
    match value {
        Value::String(s) => Ok(Text::from(s.as_str())),
        Value::Null => Ok(Text::default()),
        v => Err(format!("expected a string for {what}, found {v}")),
    }
}

/// `get`, `put V`, `append V`, each with a key; a get's `nil` is the empty
/// string; a `fail`ed operation did not happen.
impl Decode for Kv {
    fn decode_input(&self, f: &str, key: Option<&str>, value: &Value) -> Result<KvInput, String> {
        decode_input(f, key, value)
    }

    fn decode_completion(
        &self,
        input: &KvInput,
        ok: bool,
        value: &Value,
    ) -> Result<Completion<KvOutput>, String> {
        decode_completion(input, ok, value)
    }
}

/// As for [`Kv`].
impl Decode for KvMap {
    fn decode_input(&self, f: &str, key: Option<&str>, value: &Value) -> Result<KvInput, String> {
        decode_input(f, key, value)
    }

    fn decode_completion(
        &self,
        input: &KvInput,
        ok: bool,
        value: &Value,
    ) -> Result<Completion<KvOutput>, String> {
        decode_completion(input, ok, value)
    }
}

fn decode_input(f: &str, key: Option<&str>, value: &Value) -> Result<KvInput, String> {
    {
        let key = Text::from(key.ok_or_else(|| format!("a kv '{f}' needs a key"))?);
        match f {
            "get" => Ok(KvInput::Get { key }),
            "put" => Ok(KvInput::Put {
                key,
                value: text(value, "the value of a put")?,
            }),
            "append" => Ok(KvInput::Append {
                key,
                value: text(value, "the value of an append")?,
            }),
            _ => Err(format!(
                "expected 'get', 'put' or 'append' for the kv model, found '{f}'"
            )),
        }
    }
}

fn decode_completion(
    input: &KvInput,
    ok: bool,
    value: &Value,
) -> Result<Completion<KvOutput>, String> {
    Ok(match (input, ok) {
        (KvInput::Get { .. }, true) => {
            Completion::Returned(KvOutput::Value(text(value, "the value of a get")?))
        }
        (_, true) => Completion::Returned(KvOutput::Ok),
        (_, false) => Completion::DidNotHappen,
    })
}
