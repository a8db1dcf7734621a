//! A set of integers: add, remove, contains.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::format::{Completion, Decode, int};
use crate::model::Model;

/// A set, empty at the start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Set;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetInput {
    Add(i64),
    Remove(i64),
    Contains(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetOutput {
    /// An add or remove that says nothing more.
    Ok,
    /// For an add: whether the element was new; for a remove: whether it was
    /// there; for contains: whether it is there.
    Bool(bool),
}

impl Model for Set {
    type State = BTreeSet<i64>;
    type Input = SetInput;
    type Output = SetOutput;

    fn init(&self) -> BTreeSet<i64> {
        BTreeSet::new()
    }

    fn step(
        &self,
        state: &BTreeSet<i64>,
        input: &SetInput,
        output: Option<&SetOutput>,
    ) -> Option<BTreeSet<i64>> {
        let (SetInput::Add(element) | SetInput::Remove(element) | SetInput::Contains(element)) =
            input;
        let present = state.contains(element);
        match (input, output) {
            (SetInput::Contains(_), None) => Some(state.clone()),
            (SetInput::Contains(_), Some(SetOutput::Bool(b))) => {
                (*b == present).then(|| state.clone())
            }
            (SetInput::Add(v), None | Some(SetOutput::Ok)) => {
                let mut next = state.clone();
                next.insert(*v);
                Some(next)
            }
            (SetInput::Add(v), Some(SetOutput::Bool(new))) => (*new != present).then(|| {
                let mut next = state.clone();
                next.insert(*v);
                next
            }),
            (SetInput::Remove(v), None | Some(SetOutput::Ok)) => {
                let mut next = state.clone();
                next.remove(v);
                Some(next)
            }
            (SetInput::Remove(v), Some(SetOutput::Bool(was))) => (*was == present).then(|| {
                let mut next = state.clone();
                next.remove(v);
                next
            }),
            _ => None,
        }
    }

    fn describe_input(&self, input: &SetInput) -> String {
        match input {
            SetInput::Add(v) => format!("add({v})"),
            SetInput::Remove(v) => format!("remove({v})"),
            SetInput::Contains(v) => format!("contains({v})"),
        }
    }

    fn describe_output(&self, output: &SetOutput) -> String {
        match output {
            SetOutput::Ok => "ok".into(),
            SetOutput::Bool(b) => b.to_string(),
        }
    }
}

/// `add V`, `remove V`, `contains V`; an `ok` may carry a boolean result
/// (for `contains`, it must); a `fail`ed operation did not happen.
impl Decode for Set {
    fn decode_input(&self, f: &str, _key: Option<&str>, value: &Value) -> Result<SetInput, String> {
        match f {
            "add" => Ok(SetInput::Add(int(value, "the element of an add")?)),
            "remove" => Ok(SetInput::Remove(int(value, "the element of a remove")?)),
            "contains" => Ok(SetInput::Contains(int(value, "the element of a contains")?)),
            _ => Err(format!(
                "expected 'add', 'remove' or 'contains' for the set model, found '{f}'"
            )),
        }
    }

    fn decode_completion(
        &self,
        input: &SetInput,
        ok: bool,
        value: &Value,
    ) -> Result<Completion<SetOutput>, String> {
        if !ok {
            return Ok(Completion::DidNotHappen);
        }
        Ok(Completion::Returned(match (input, value) {
            (_, Value::Bool(b)) => SetOutput::Bool(*b),
            (SetInput::Contains(_), v) => {
                return Err(format!("expected true or false for a contains, found {v}"));
            }
            _ => SetOutput::Ok,
        }))
    }
}
