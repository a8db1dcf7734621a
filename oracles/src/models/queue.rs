//! A FIFO queue of integers: enqueue, dequeue, dequeue on empty.

use std::collections::VecDeque;

use serde_json::Value;

use crate::format::{Completion, Decode, int};
use crate::model::Model;

/// An unbounded FIFO queue, empty at the start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Queue;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueInput {
    Enqueue(i64),
    Dequeue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueOutput {
    /// An enqueue.
    Ok,
    /// A dequeue that took this value.
    Dequeued(i64),
    /// A dequeue that found the queue empty.
    Empty,
}

impl Model for Queue {
    type State = VecDeque<i64>;
    type Input = QueueInput;
    type Output = QueueOutput;

    fn init(&self) -> VecDeque<i64> {
        VecDeque::new()
    }

    fn step(
        &self,
        state: &VecDeque<i64>,
        input: &QueueInput,
        output: Option<&QueueOutput>,
    ) -> Option<VecDeque<i64>> {
        match (input, output) {
            (QueueInput::Enqueue(v), None | Some(QueueOutput::Ok)) => {
                let mut next = state.clone();
                next.push_back(*v);
                Some(next)
            }
            // Unknown: it took the head, if there was one.
            (QueueInput::Dequeue, None) => {
                let mut next = state.clone();
                next.pop_front();
                Some(next)
            }
            (QueueInput::Dequeue, Some(QueueOutput::Dequeued(v))) => {
                (state.front() == Some(v)).then(|| state.iter().skip(1).copied().collect())
            }
            (QueueInput::Dequeue, Some(QueueOutput::Empty)) => {
                state.is_empty().then(|| state.clone())
            }
            _ => None,
        }
    }

    fn describe_input(&self, input: &QueueInput) -> String {
        match input {
            QueueInput::Enqueue(v) => format!("enqueue({v})"),
            QueueInput::Dequeue => "dequeue()".into(),
        }
    }

    fn describe_output(&self, output: &QueueOutput) -> String {
        match output {
            QueueOutput::Ok => "ok".into(),
            QueueOutput::Dequeued(v) => v.to_string(),
            QueueOutput::Empty => "empty".into(),
        }
    }
}

/// `enqueue V`, `dequeue` (an `ok` with `nil` found the queue empty); a
/// `fail`ed operation did not happen.
impl Decode for Queue {
    fn decode_input(
        &self,
        f: &str,
        _key: Option<&str>,
        value: &Value,
    ) -> Result<QueueInput, String> {
        match f {
            "enqueue" => Ok(QueueInput::Enqueue(int(value, "the value of an enqueue")?)),
            "dequeue" => Ok(QueueInput::Dequeue),
            _ => Err(format!(
                "expected 'enqueue' or 'dequeue' for the queue model, found '{f}'"
            )),
        }
    }

    fn decode_completion(
        &self,
        input: &QueueInput,
        ok: bool,
        value: &Value,
    ) -> Result<Completion<QueueOutput>, String> {
        Ok(match (input, ok) {
            (QueueInput::Dequeue, true) => Completion::Returned(match value {
                Value::Null => QueueOutput::Empty,
                v => QueueOutput::Dequeued(int(v, "the value of a dequeue")?),
            }),
            (QueueInput::Enqueue(_), true) => Completion::Returned(QueueOutput::Ok),
            (_, false) => Completion::DidNotHappen,
        })
    }
}
