//! A register holding an integer or nothing: read, write, compare-and-set.

use serde_json::Value;

use crate::format::{Completion, Decode, int};
use crate::model::Model;

/// A register of `Option<i64>` (`None`: never written, Jepsen's `nil`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Register {
    pub initial: Option<i64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegisterInput {
    Read,
    Write(i64),
    /// Set to `to` if the value is `from`.
    Cas {
        from: i64,
        to: i64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegisterOutput {
    /// What a read returned.
    Value(Option<i64>),
    /// A write, or a compare-and-set that found `from`.
    Ok,
    /// A compare-and-set that did not find `from`.
    CasFailed,
}

impl Model for Register {
    type State = Option<i64>;
    type Input = RegisterInput;
    type Output = RegisterOutput;

    fn init(&self) -> Option<i64> {
        self.initial
    }

    fn step(
        &self,
        state: &Option<i64>,
        input: &RegisterInput,
        output: Option<&RegisterOutput>,
    ) -> Option<Option<i64>> {
        use RegisterOutput as Out;
        match (input, output) {
            (RegisterInput::Read, None) => Some(*state),
            (RegisterInput::Read, Some(Out::Value(v))) => (v == state).then_some(*state),
            (RegisterInput::Write(v), None | Some(Out::Ok)) => Some(Some(*v)),
            (RegisterInput::Cas { from, to }, None) => Some(if *state == Some(*from) {
                Some(*to)
            } else {
                *state
            }),
            (RegisterInput::Cas { from, to }, Some(Out::Ok)) => {
                (*state == Some(*from)).then_some(Some(*to))
            }
            (RegisterInput::Cas { from, .. }, Some(Out::CasFailed)) => {
                (*state != Some(*from)).then_some(*state)
            }
            _ => None,
        }
    }

    fn describe_input(&self, input: &RegisterInput) -> String {
        match input {
            RegisterInput::Read => "read()".into(),
            RegisterInput::Write(v) => format!("write({v})"),
            RegisterInput::Cas { from, to } => format!("cas({from}, {to})"),
        }
    }

    fn describe_output(&self, output: &RegisterOutput) -> String {
        match output {
            RegisterOutput::Value(Some(v)) => v.to_string(),
            RegisterOutput::Value(None) => "nil".into(),
            RegisterOutput::Ok => "ok".into(),
            RegisterOutput::CasFailed => "failed".into(),
        }
    }
}

/// `read` (value ignored), `write V`, `cas [FROM TO]`. A `fail`ed `cas` is a
/// compare-and-set that did not find `FROM` (as etcd reports it, and as
/// Porcupine reads it); any other `fail`ed operation did not happen.
impl Decode for Register {
    fn decode_input(
        &self,
        f: &str,
        _key: Option<&str>,
        value: &Value,
    ) -> Result<RegisterInput, String> {
        match f {
            "read" => Ok(RegisterInput::Read),
            "write" => Ok(RegisterInput::Write(int(value, "the value of a write")?)),
            "cas" => match value.as_array().map(Vec::as_slice) {
                Some([from, to]) => Ok(RegisterInput::Cas {
                    from: int(from, "a cas's expected value")?,
                    to: int(to, "a cas's new value")?,
                }),
                _ => Err(format!("expected [FROM TO] for a cas, found {value}")),
            },
            _ => Err(format!(
                "expected 'read', 'write' or 'cas' for the register model, found '{f}'"
            )),
        }
    }

    fn decode_completion(
        &self,
        input: &RegisterInput,
        ok: bool,
        value: &Value,
    ) -> Result<Completion<RegisterOutput>, String> {
        Ok(match (input, ok) {
            (RegisterInput::Read, true) => {
                Completion::Returned(RegisterOutput::Value(match value {
                    Value::Null => None,
                    v => Some(int(v, "the value of a read")?),
                }))
            }
            (RegisterInput::Cas { .. }, false) => Completion::Returned(RegisterOutput::CasFailed),
            (_, true) => Completion::Returned(RegisterOutput::Ok),
            (_, false) => Completion::DidNotHappen,
        })
    }
}
