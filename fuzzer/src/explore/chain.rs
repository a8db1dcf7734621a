//! Chained havoc: each execution a step deeper than the last.
//!
//! LibAFL's `StdMutationalStage` with its havoc mutator copies the corpus
//! entry for every execution and stacks 2 to 128 fresh mutations on the
//! copy (about 36 on average): on a small target those mutations cost more
//! than the run itself. libFuzzer instead mutates the previous mutant once
//! more before each execution. [`ChainStage`] does that with a step of two
//! mutations ([`step`]; one alone found the bank example's bug after about
//! twice as many executions), over chains whose lengths are drawn as havoc
//! draws its stacks (2 to 128 steps, log-uniform): an execution costs two
//! mutations and no copy, and the deep mutants havoc reaches are still
//! reached, one execution at a time. Per corpus entry the stage runs as
//! many executions as `StdMutationalStage` (1 to 128), so the corpus
//! scheduler sees the same rhythm. Figures in docs/benchmarks.md
//! ("Explorer throughput"). Written here because LibAFL 0.16.1 has no stage that
//! keeps the mutant between executions.

use std::borrow::Cow;
use std::num::NonZeroUsize;

use libafl::Error;
use libafl::fuzzer::Evaluator;
use libafl::inputs::BytesInput;
use libafl::mutators::{HavocScheduledMutator, MutationResult, Mutator};
use libafl::stages::Stage;
use libafl::state::{HasCurrentTestcase, HasRand};
use libafl_bolts::Named;
use libafl_bolts::rands::Rand;
use libafl_bolts::tuples::NamedTuple;

use super::State;

/// Executions per corpus entry, at most (as LibAFL's mutational stage).
const MAX_ITERATIONS: NonZeroUsize = NonZeroUsize::new(128).unwrap();
/// A chain is `1 << (1 + k)` steps long, `k` below this (havoc's stack
/// sizes: 2 to 128).
const MAX_LENGTH_POW: NonZeroUsize = NonZeroUsize::new(7).unwrap();

/// The step of a chain: two of `mutations`, as LibAFL's havoc picks them.
pub(super) fn step<MT>(mutations: MT) -> HavocScheduledMutator<MT>
where
    MT: NamedTuple,
{
    // Havoc stacks `1 << (1 + k)` mutations, `k` below the power: two.
    HavocScheduledMutator::with_max_stack_pow(mutations, 1)
}

/// A mutational stage whose mutant grows by one application of `M` per
/// execution, starting again from the corpus entry after each chain.
pub(super) struct ChainStage<M> {
    mutator: M,
}

impl<M> ChainStage<M> {
    pub fn new(mutator: M) -> ChainStage<M> {
        ChainStage { mutator }
    }
}

impl<M> Named for ChainStage<M> {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("ChainStage");
        &NAME
    }
}

impl<E, EM, Z, M> Stage<E, EM, State, Z> for ChainStage<M>
where
    Z: Evaluator<E, EM, BytesInput, State>,
    M: Mutator<BytesInput, State>,
{
    fn perform(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut State,
        manager: &mut EM,
    ) -> Result<(), Error> {
        let executions = 1 + state.rand_mut().below(MAX_ITERATIONS);
        let parent = state.current_input_cloned()?;
        let length = |state: &mut State| 1u32 << (1 + state.rand_mut().below(MAX_LENGTH_POW));
        let mut mutant = parent.clone();
        let mut left = length(state);
        for _ in 0..executions {
            if left == 0 {
                mutant.as_mut().clone_from(parent.as_ref());
                left = length(state);
            }
            left -= 1;
            if self.mutator.mutate(state, &mut mutant)? == MutationResult::Skipped {
                continue;
            }
            let (_, id) = fuzzer.evaluate_filtered(state, executor, manager, &mutant)?;
            self.mutator.post_exec(state, id)?;
        }
        Ok(())
    }
}

super::always_restartable!(ChainStage<M>, for <M>);
