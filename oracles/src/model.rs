//! The sequential specification a history is checked against.

use std::fmt::Debug;
use std::hash::{Hash, Hasher};

/// A sequential specification: the states an object can be in and how each
/// operation moves it from one state to the next.
///
/// The checker calls [`Model::init`] once per partition, then
/// [`Model::step`] many times, in any order the search chooses, always with
/// a state it got from `init` or from an earlier `step`. `step` must be a
/// pure function of its arguments: the checker caches `(linearized
/// operations, state)` pairs and never revisits one, so equal states must
/// behave the same.
///
/// An operation whose outcome is unknown (a timeout, a crash, Jepsen's
/// `:info`) is stepped with `output == None`: it may have taken effect with
/// any output. `step` should then accept it in every state and return the
/// state it leads to (for a deterministic model, the one the operation
/// produces whatever its output). Such an operation may take effect at any
/// point after its invocation, or never (as if it returned at the end of
/// the history, as Jepsen and Porcupine treat it).
pub trait Model {
    /// A state of the object. Cheap to hash and compare; cloned rarely (the
    /// checker moves the states `step` returns into its cache).
    type State: Clone + Eq + Hash;
    /// What a client asks for (`write(3)`).
    type Input: Clone + Debug + PartialEq;
    /// What the client got back (`ok`, `read -> 3`).
    type Output: Clone + Debug;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// The state after `input` took effect in `state` and returned `output`
    /// (`None`: unknown), or `None` if the object could not have returned
    /// `output` in `state`.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State>;

    /// The partition an operation belongs to (P-compositionality): a history
    /// is linearizable if and only if each partition is, checked on its own
    /// from [`Model::init`]. `None` (the default) puts the operation in the
    /// single unnamed partition. A key-value store partitions by key.
    fn partition(&self, input: &Self::Input) -> Option<String> {
        let _ = input;
        None
    }

    /// The operation as text for explanations, such as `write(3)`.
    fn describe_input(&self, input: &Self::Input) -> String {
        format!("{input:?}")
    }

    /// The result as text for explanations, such as `3` or `ok`.
    fn describe_output(&self, output: &Self::Output) -> String {
        format!("{output:?}")
    }
}

/// A sequential specification whose operations may lead to several states
/// (a `put` into a bounded cache that may evict any entry). Check it through
/// [`PowerSet`], which tracks the set of states the object may be in.
pub trait NondeterministicModel {
    type State: Clone + Eq + Hash;
    type Input: Clone + Debug + PartialEq;
    type Output: Clone + Debug;

    /// The states the object may start in.
    fn init(&self) -> Vec<Self::State>;

    /// Every state `input` may lead to from `state` while returning `output`
    /// (`None`: unknown); empty if it cannot return `output` in `state`.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Vec<Self::State>;

    /// As [`Model::partition`].
    fn partition(&self, input: &Self::Input) -> Option<String> {
        let _ = input;
        None
    }

    /// As [`Model::describe_input`].
    fn describe_input(&self, input: &Self::Input) -> String {
        format!("{input:?}")
    }

    /// As [`Model::describe_output`].
    fn describe_output(&self, output: &Self::Output) -> String {
        format!("{output:?}")
    }
}

/// A [`NondeterministicModel`] turned into a [`Model`] whose state is the set
/// of states the object may be in (the power-set construction).
#[derive(Clone, Debug, Default)]
pub struct PowerSet<M>(pub M);

/// A set of states without duplicates; equality and hashing ignore order.
#[derive(Clone, Debug)]
pub struct StateSet<S> {
    states: Vec<S>,
    hash: u64,
}

impl<S: Eq + Hash> StateSet<S> {
    fn new(candidates: impl IntoIterator<Item = S>) -> Self {
        let mut states: Vec<S> = Vec::new();
        let mut hash = 0u64;
        for s in candidates {
            if !states.contains(&s) {
                // Order-independent: the sum of the members' hashes.
                hash = hash.wrapping_add(crate::hash_of(&s));
                states.push(s);
            }
        }
        Self { states, hash }
    }

    /// The states, in the order they were first reached.
    pub fn states(&self) -> &[S] {
        &self.states
    }
}

impl<S: Eq> PartialEq for StateSet<S> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash
            && self.states.len() == other.states.len()
            && self.states.iter().all(|s| other.states.contains(s))
    }
}

impl<S: Eq> Eq for StateSet<S> {}

impl<S> Hash for StateSet<S> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl<M: NondeterministicModel> Model for PowerSet<M> {
    type State = StateSet<M::State>;
    type Input = M::Input;
    type Output = M::Output;

    fn init(&self) -> Self::State {
        StateSet::new(self.0.init())
    }

    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State> {
        let next = StateSet::new(
            state
                .states
                .iter()
                .flat_map(|s| self.0.step(s, input, output)),
        );
        (!next.states.is_empty()).then_some(next)
    }

    fn partition(&self, input: &Self::Input) -> Option<String> {
        self.0.partition(input)
    }

    fn describe_input(&self, input: &Self::Input) -> String {
        self.0.describe_input(input)
    }

    fn describe_output(&self, output: &Self::Output) -> String {
        self.0.describe_output(output)
    }
}
