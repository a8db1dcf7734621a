//! Reading histories from logs.
//!
//! Each format turns its lines into [`RawEvent`]s (a client's invocation or
//! completion of an operation named `f`, with an optional key and a value);
//! a model's [`Decode`] says what those mean as its inputs and outputs; and
//! [`parse`] pairs invocations with completions per client into a
//! [`History`]. Errors name the line (1-based).
//!
//! Completions: `ok` returned the value; `fail` certainly did not take
//! effect (the operation is dropped, unless the model reads it otherwise:
//! the register reads a failed `cas` as a compare that did not match);
//! `info` has an unknown outcome. An operation never completed is unknown.
//!
//! The formats:
//! - [`Format::Jepsen`]: Jepsen's log lines, as in Porcupine's etcd test
//!   data: `INFO  jepsen.util - 3 :invoke :cas [1 2]` (process, type,
//!   function, EDN value; tabs or spaces). Lines of the `:nemesis` process
//!   are skipped.
//! - [`Format::Kv`]: one EDN map per line, as in Porcupine's kv test data
//!   and Jepsen's `history.edn`: `{:process 9, :type :invoke, :f :append,
//!   :key "0", :value "x 9 0 y"}`. A `:time` (integer) is used as the event
//!   time; other keys are ignored.
//! - [`Format::Jsonl`]: one JSON object per line:
//!   `{"client":1,"type":"invoke","f":"write","key":"x","value":3,"time":17}`.
//!   `client` (or `process`): a non-negative integer; `type`: `invoke`,
//!   `ok`, `fail` or `info`; `f`: the operation; `key`: optional, a string
//!   or integer (the partition for the kv model); `value`: optional, any
//!   JSON (the argument on `invoke`, the result on `ok`); `time`: optional,
//!   a non-negative integer (give it on every line or on none; without it
//!   the time is the event's position). Register: `read`, `write` V, `cas`
//!   [FROM, TO] (`fail` = did not match); kv: `get`/`put`/`append` with a
//!   string `key` and `value`; queue: `enqueue` V, `dequeue` (result `null`
//!   = empty); set: `add` V, `remove` V, `contains` V (result a boolean).
//!
//! Without a time, every format uses the event's position in the file, as
//! Porcupine does for its event histories.

mod edn;
mod jepsen;
mod jsonl;
mod kv;

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::history::{History, OpId};
use crate::model::Model;

/// A log format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Jepsen,
    Kv,
    Jsonl,
}

impl Format {
    pub const ALL: [Format; 3] = [Format::Jepsen, Format::Kv, Format::Jsonl];

    pub fn name(self) -> &'static str {
        match self {
            Format::Jepsen => "jepsen",
            Format::Kv => "kv",
            Format::Jsonl => "jsonl",
        }
    }

    /// Tells the format from the first non-blank line: `{:` starts an EDN
    /// map (kv), `{` a JSON object, and a line with ` - ` after a logger
    /// name is Jepsen's.
    pub fn detect(text: &str) -> Result<Format, ParseError> {
        let Some((index, line)) = text.lines().enumerate().find(|(_, l)| !l.trim().is_empty())
        else {
            return Err(ParseError::new(1, "the history is empty"));
        };
        let line = line.trim_start();
        if line.starts_with("{:") {
            Ok(Format::Kv)
        } else if line.starts_with('{') {
            Ok(Format::Jsonl)
        } else if line.contains(" - ") {
            Ok(Format::Jepsen)
        } else {
            Err(ParseError::new(
                index + 1,
                "cannot tell the format: expected a Jepsen log line, an EDN map \
                 `{:process ...}` or a JSON object",
            ))
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("unknown format '{s}': expected 'jepsen', 'kv' or 'jsonl'"))
    }
}

/// A line that could not be read, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based.
    pub line: usize,
    pub message: String,
}

impl ParseError {
    /// An error at `line`; control characters in `message` (a quoted
    /// operation name may hold a JSON-escaped newline) are written escaped,
    /// so the error stays one line.
    pub fn new(line: usize, message: impl Into<String>) -> Self {
        let mut message: String = message.into();
        if message.chars().any(char::is_control) {
            let mut escaped = String::with_capacity(message.len() + 8);
            for c in message.chars() {
                if c.is_control() {
                    escaped.extend(c.escape_default());
                } else {
                    escaped.push(c);
                }
            }
            message = escaped;
        }
        debug_assert!(!message.contains('\n'));
        Self { line, message }
    }
}

/// What an event says about its operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Invoke,
    Ok,
    Fail,
    Info,
}

impl EventKind {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "invoke" => EventKind::Invoke,
            "ok" => EventKind::Ok,
            "fail" => EventKind::Fail,
            "info" => EventKind::Info,
            _ => return None,
        })
    }
}

/// One line of a log, before a model gives it meaning.
#[derive(Clone, Debug, PartialEq)]
pub struct RawEvent {
    /// 1-based.
    pub line: usize,
    pub client: u64,
    pub kind: EventKind,
    /// The operation's name, without Jepsen's leading colon.
    pub f: String,
    pub key: Option<String>,
    pub value: Value,
    pub time: Option<u64>,
}

/// How a completed operation ended, as a model reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Completion<O> {
    Returned(O),
    /// It certainly did not take effect: drop it.
    DidNotHappen,
}

/// How a model reads its operations from [`RawEvent`]s.
pub trait Decode: Model {
    /// The input of an invocation of `f`.
    fn decode_input(
        &self,
        f: &str,
        key: Option<&str>,
        value: &Value,
    ) -> Result<Self::Input, String>;

    /// The outcome of a completion (`ok`: true, `fail`: false) of `input`.
    fn decode_completion(
        &self,
        input: &Self::Input,
        ok: bool,
        value: &Value,
    ) -> Result<Completion<Self::Output>, String>;
}

/// `value` as an integer, or an error naming `what`.
pub(crate) fn int(value: &Value, what: &str) -> Result<i64, String> {
    value
        .as_i64()
        .ok_or_else(|| format!("expected an integer for {what}, found {value}"))
}

/// The events of `text` in `format`.
pub fn events(text: &str, format: Format) -> Result<Vec<RawEvent>, ParseError> {
    let mut events = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let event = match format {
            Format::Jepsen => jepsen::event(line),
            Format::Kv => kv::event(line),
            Format::Jsonl => jsonl::event(line),
        }
        .map_err(|message| ParseError::new(number, message))?;
        if let Some(mut event) = event {
            event.line = number;
            events.push(event);
        }
    }
    Ok(events)
}

/// Reads `text` in `format` (detected when `None`) as a history of
/// `model`'s operations.
pub fn parse<M: Decode>(
    model: &M,
    text: &str,
    format: Option<Format>,
) -> Result<History<M::Input, M::Output>, ParseError> {
    let format = match format {
        Some(format) => format,
        None => Format::detect(text)?,
    };
    history(model, &events(text, format)?)
}

struct Pending<'a, I> {
    id: OpId,
    input: I,
    line: usize,
    f: &'a str,
    call: u64,
}

/// Pairs each client's invocations with their completions.
pub fn history<M: Decode>(
    model: &M,
    events: &[RawEvent],
) -> Result<History<M::Input, M::Output>, ParseError> {
    let mut history = History::new();
    let mut pending: HashMap<u64, Pending<'_, M::Input>> = HashMap::new();
    for (position, event) in events.iter().enumerate() {
        let error = |message: String| ParseError::new(event.line, message);
        let time = event.time.unwrap_or(position as u64);
        if event.kind == EventKind::Invoke {
            if let Some(p) = pending.get(&event.client) {
                return Err(error(format!(
                    "client {} invokes an operation while its '{}' from line {} is pending",
                    event.client, p.f, p.line
                )));
            }
            let input = model
                .decode_input(&event.f, event.key.as_deref(), &event.value)
                .map_err(error)?;
            let p = Pending {
                id: history.invoke(event.client, input.clone(), time),
                input,
                line: event.line,
                f: &event.f,
                call: time,
            };
            pending.insert(event.client, p);
            continue;
        }
        let Some(p) = pending.remove(&event.client) else {
            return Err(error(format!(
                "client {} completes an operation it has not invoked",
                event.client
            )));
        };
        if p.f != event.f {
            return Err(error(format!(
                "client {} completes '{}' but invoked '{}' on line {}",
                event.client, event.f, p.f, p.line
            )));
        }
        match event.kind {
            EventKind::Info => history.unknown(p.id),
            EventKind::Ok | EventKind::Fail => {
                if time < p.call {
                    return Err(error(format!(
                        "the operation returns at {time}, before its invocation at {} on line {}",
                        p.call, p.line
                    )));
                }
                let ok = event.kind == EventKind::Ok;
                match model
                    .decode_completion(&p.input, ok, &event.value)
                    .map_err(error)?
                {
                    Completion::Returned(output) => history.complete(p.id, output, time),
                    Completion::DidNotHappen => history.fail(p.id),
                }
            }
            EventKind::Invoke => unreachable!("handled above"),
        }
    }
    Ok(history)
}
