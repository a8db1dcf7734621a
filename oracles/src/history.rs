//! Histories: what clients asked for, when, and what they got back.

/// How an operation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<O> {
    /// It returned `output` at `time`.
    Returned { output: O, time: u64 },
    /// Nobody knows (a timeout, a crash, Jepsen's `:info`, or still pending
    /// when the history ended): it may or may not have taken effect, at any
    /// time after its invocation, with any output.
    Unknown,
}

/// One operation of a history: a client's call and, if known, its return.
/// Times are the caller's (virtual nanoseconds in a simulation, or the
/// position of the event in a log); intervals are closed, so an operation
/// returning at 5 and one invoked at 5 are concurrent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation<I, O> {
    pub client: u64,
    pub input: I,
    pub call: u64,
    pub outcome: Outcome<O>,
}

impl<I, O> Operation<I, O> {
    /// The output, if known.
    pub fn output(&self) -> Option<&O> {
        match &self.outcome {
            Outcome::Returned { output, .. } => Some(output),
            Outcome::Unknown => None,
        }
    }

    /// The return time, if known (`None`: the end of the history).
    pub fn return_time(&self) -> Option<u64> {
        match self.outcome {
            Outcome::Returned { time, .. } => Some(time),
            Outcome::Unknown => None,
        }
    }
}

/// The handle [`History::invoke`] returns, to complete the operation later.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpId(usize);

#[derive(Clone, Debug)]
enum Slot<I, O> {
    Pending { client: u64, input: I, call: u64 },
    Done(Operation<I, O>),
    Failed,
}

/// A history recorder for simulations: a client calls [`History::invoke`]
/// when it sends a request and [`History::complete`] (or
/// [`History::unknown`], [`History::fail`]) when it learns the outcome.
/// Operations still pending when the history is checked count as unknown.
///
/// ```
/// use dst_oracles::History;
/// use dst_oracles::models::{Register, RegisterInput, RegisterOutput};
///
/// let mut history = History::new();
/// let write = history.invoke(1, RegisterInput::Write(3), 10);
/// let read = history.invoke(2, RegisterInput::Read, 12);
/// history.complete(read, RegisterOutput::Value(Some(3)), 15);
/// history.complete(write, RegisterOutput::Ok, 20);
/// assert!(history.check(&Register::default()).is_linearizable());
/// ```
#[derive(Clone, Debug)]
pub struct History<I, O> {
    slots: Vec<Slot<I, O>>,
}

impl<I, O> Default for History<I, O> {
    fn default() -> Self {
        Self { slots: Vec::new() }
    }
}

impl<I: Clone, O: Clone> History<I, O> {
    pub fn new() -> Self {
        Self::default()
    }

    /// A history of already complete operations.
    pub fn from_operations(operations: impl IntoIterator<Item = Operation<I, O>>) -> Self {
        Self {
            slots: operations.into_iter().map(Slot::Done).collect(),
        }
    }

    /// Records that `client` invoked `input` at `time`.
    pub fn invoke(&mut self, client: u64, input: I, time: u64) -> OpId {
        self.slots.push(Slot::Pending {
            client,
            input,
            call: time,
        });
        OpId(self.slots.len() - 1)
    }

    /// Records that the operation returned `output` at `time`.
    ///
    /// # Panics
    /// If the operation was already completed or `time` is before its
    /// invocation.
    pub fn complete(&mut self, id: OpId, output: O, time: u64) {
        let (client, input, call) = self.take_pending(id);
        assert!(
            time >= call,
            "operation {} returned at {time}, before its invocation at {call}",
            id.0
        );
        self.slots[id.0] = Slot::Done(Operation {
            client,
            input,
            call,
            outcome: Outcome::Returned { output, time },
        });
    }

    /// Records that the outcome will never be known (a timeout, a crash):
    /// the operation may or may not take effect, at any time from now on.
    ///
    /// # Panics
    /// If the operation was already completed.
    pub fn unknown(&mut self, id: OpId) {
        let (client, input, call) = self.take_pending(id);
        self.slots[id.0] = Slot::Done(Operation {
            client,
            input,
            call,
            outcome: Outcome::Unknown,
        });
    }

    /// Records that the operation certainly did not take effect (Jepsen's
    /// `:fail`): it is left out of the history.
    ///
    /// # Panics
    /// If the operation was already completed.
    pub fn fail(&mut self, id: OpId) {
        self.take_pending(id);
        self.slots[id.0] = Slot::Failed;
    }

    fn take_pending(&mut self, id: OpId) -> (u64, I, u64) {
        match std::mem::replace(&mut self.slots[id.0], Slot::Failed) {
            Slot::Pending {
                client,
                input,
                call,
            } => (client, input, call),
            other => {
                self.slots[id.0] = other;
                panic!("operation {} was already completed", id.0)
            }
        }
    }

    /// The operations, in invocation order, pending ones as unknown and
    /// failed ones left out.
    pub fn operations(&self) -> Vec<Operation<I, O>> {
        self.slots
            .iter()
            .filter_map(|slot| match slot {
                Slot::Pending {
                    client,
                    input,
                    call,
                } => Some(Operation {
                    client: *client,
                    input: input.clone(),
                    call: *call,
                    outcome: Outcome::Unknown,
                }),
                Slot::Done(op) => Some(op.clone()),
                Slot::Failed => None,
            })
            .collect()
    }

    /// How many operations [`History::operations`] returns.
    pub fn len(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| !matches!(s, Slot::Failed))
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
