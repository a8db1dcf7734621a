//! Each model on small hand-made histories: linearizable and not, with
//! unknown outcomes, and the explanations of violations.

use dst_oracles::models::{
    Kv, KvInput, KvMap, KvOutput, Queue, QueueInput, QueueOutput, Register, RegisterInput,
    RegisterOutput, Set, SetInput, SetOutput, Text,
};
use dst_oracles::{
    Budget, CheckOptions, History, Model, NondeterministicModel, Operation, Outcome, PowerSet,
    Verdict, check_operations,
};

/// `(client, input, call, Some((output, return)) or None for unknown)`.
type Spec<I, O> = (u64, I, u64, Option<(O, u64)>);

fn history<I: Clone, O: Clone>(ops: Vec<Spec<I, O>>) -> History<I, O> {
    History::from_operations(ops.into_iter().map(|(client, input, call, ret)| Operation {
        client,
        input,
        call,
        outcome: match ret {
            Some((output, time)) => Outcome::Returned { output, time },
            None => Outcome::Unknown,
        },
    }))
}

/// Checks `history`; for a violation, also checks that the explanation is
/// smaller than the history and not linearizable on its own.
fn verdict<M: Model>(model: &M, history: &History<M::Input, M::Output>) -> Verdict {
    let verdict = history.check(model);
    if let Verdict::Violation(explanation) = &verdict {
        let operations = history.operations();
        let subset: Vec<_> = explanation
            .operations
            .iter()
            .map(|op| operations[op.index].clone())
            .collect();
        assert!(!subset.is_empty());
        assert!(subset.len() <= explanation.partition_size);
        let alone = check_operations(model, &subset, &CheckOptions::default());
        assert!(
            alone.is_violation(),
            "the explanation is linearizable on its own:\n{explanation}"
        );
    }
    verdict
}

use RegisterInput::{Cas, Read, Write};
use RegisterOutput::{CasFailed, Ok as Done, Value};

#[test]
fn register_concurrent_write_and_reads() {
    // A write overlapping two reads: the reads may see old then new...
    let ok = history(vec![
        (1, Write(1), 0, Some((Done, 10))),
        (2, Read, 1, Some((Value(None), 3))),
        (3, Read, 4, Some((Value(Some(1)), 6))),
    ]);
    assert_eq!(verdict(&Register::default(), &ok), Verdict::Linearizable);
    // ...but not new then old.
    let bad = history(vec![
        (1, Write(1), 0, Some((Done, 10))),
        (2, Read, 1, Some((Value(Some(1)), 3))),
        (3, Read, 4, Some((Value(None), 6))),
    ]);
    let v = verdict(&Register::default(), &bad);
    let explanation = v.explanation().expect("a violation");
    assert_eq!(explanation.partition, None);
    // The core: 1 then nil, which no write (placed anywhere) explains.
    let results: Vec<_> = explanation
        .operations
        .iter()
        .map(|o| o.result.as_str())
        .collect();
    assert_eq!(results, ["1", "nil"], "{explanation}");
    assert!(explanation.minimal);
}

#[test]
fn register_stale_read_explanation_is_small() {
    // Eight sequential writes, then a read of a value overwritten long ago.
    let mut ops: Vec<Spec<RegisterInput, RegisterOutput>> = (0..8)
        .map(|i| (1, Write(i), 10 * i as u64, Some((Done, 10 * i as u64 + 5))))
        .collect();
    ops.push((2, Read, 300, Some((Value(Some(3)), 305))));
    ops.push((3, Read, 310, Some((Value(Some(7)), 315))));
    let h = history(ops);
    let v = verdict(&Register::default(), &h);
    let explanation = v.explanation().expect("a violation");
    assert!(explanation.minimal);
    // The read of 3, the write of 3, and a later write that overwrote it.
    let described: Vec<_> = explanation
        .operations
        .iter()
        .map(|o| o.operation.as_str())
        .collect();
    assert_eq!(explanation.operations.len(), 3, "{explanation}");
    assert!(
        described.contains(&"write(3)") && described.contains(&"read()"),
        "{explanation}"
    );
    // The text has one line per operation plus a heading and a header.
    assert_eq!(explanation.to_string().lines().count(), 2 + 3);
    let json = serde_json::to_value(explanation).unwrap();
    assert_eq!(json["operations"].as_array().unwrap().len(), 3);
    assert_eq!(json["operations"][0]["client"], 1);
}

#[test]
fn register_compare_and_set() {
    let ok = history(vec![
        (1, Write(1), 0, Some((Done, 1))),
        (1, Cas { from: 1, to: 2 }, 2, Some((Done, 3))),
        (2, Cas { from: 1, to: 3 }, 4, Some((CasFailed, 5))),
        (2, Read, 6, Some((Value(Some(2)), 7))),
    ]);
    assert!(verdict(&Register::default(), &ok).is_linearizable());
    // A failed cas whose expected value was certainly there.
    let bad = history(vec![
        (1, Write(1), 0, Some((Done, 1))),
        (2, Cas { from: 1, to: 3 }, 4, Some((CasFailed, 5))),
    ]);
    assert!(verdict(&Register::default(), &bad).is_violation());
    // The initial value counts.
    let initial = history(vec![(1, Read, 0, Some((Value(Some(7)), 1)))]);
    assert!(verdict(&Register { initial: Some(7) }, &initial).is_linearizable());
    assert!(verdict(&Register::default(), &initial).is_violation());
}

#[test]
fn register_unknown_outcomes_may_or_may_not_take_effect() {
    // A timed-out write seen later: it took effect after its invocation.
    let seen = history(vec![
        (1, Write(5), 0, None),
        (2, Read, 100, Some((Value(Some(5)), 101))),
    ]);
    assert!(verdict(&Register::default(), &seen).is_linearizable());
    // Not seen: it never took effect (or did after the read).
    let unseen = history(vec![
        (1, Write(5), 0, None),
        (2, Read, 100, Some((Value(None), 101))),
    ]);
    assert!(verdict(&Register::default(), &unseen).is_linearizable());
    // Seen, then not seen: a value cannot come back.
    let flicker = history(vec![
        (1, Write(5), 0, None),
        (2, Read, 100, Some((Value(Some(5)), 101))),
        (2, Read, 102, Some((Value(None), 103))),
    ]);
    assert!(verdict(&Register::default(), &flicker).is_violation());
    // But not before its invocation.
    let early = history(vec![
        (2, Read, 0, Some((Value(Some(5)), 1))),
        (1, Write(5), 2, None),
    ]);
    assert!(verdict(&Register::default(), &early).is_violation());
    // An unknown cas may apply: the read sees its new value.
    let cas = history(vec![
        (1, Write(1), 0, Some((Done, 1))),
        (2, Cas { from: 1, to: 2 }, 2, None),
        (3, Read, 5, Some((Value(Some(2)), 6))),
    ]);
    assert!(verdict(&Register::default(), &cas).is_linearizable());
}

#[test]
fn history_recorder_pairs_invocations_with_outcomes() {
    let mut h = History::new();
    let w = h.invoke(1, Write(1), 10);
    let r = h.invoke(2, Read, 12);
    let lost = h.invoke(3, Write(9), 13);
    let never = h.invoke(4, Write(7), 14);
    h.complete(r, Value(Some(9)), 20);
    h.complete(w, Done, 25);
    h.unknown(lost);
    h.fail(never);
    assert_eq!(h.len(), 3);
    let ops = h.operations();
    assert_eq!(ops[2].outcome, Outcome::Unknown);
    assert_eq!(ops[1].return_time(), Some(20));
    assert!(h.check(&Register::default()).is_linearizable());
    // Without the lost write the read of 9 cannot be explained; the failed
    // write of 7 does not count either way.
    let mut h2 = History::new();
    let r = h2.invoke(2, Read, 12);
    let never = h2.invoke(4, Write(9), 10);
    h2.fail(never);
    h2.complete(r, Value(Some(9)), 20);
    assert!(h2.check(&Register::default()).is_violation());
    // An operation still pending counts as unknown.
    let mut h3 = History::new();
    h3.invoke(1, Write(9), 0);
    let r = h3.invoke(2, Read, 5);
    h3.complete(r, Value(Some(9)), 6);
    assert!(h3.check(&Register::default()).is_linearizable());
}

#[test]
#[should_panic(expected = "already completed")]
fn completing_twice_panics() {
    let mut h: History<RegisterInput, RegisterOutput> = History::new();
    let w = h.invoke(1, Write(1), 0);
    h.complete(w, Done, 1);
    h.complete(w, Done, 2);
}

fn get(key: &str) -> KvInput {
    KvInput::Get { key: key.into() }
}
fn put(key: &str, value: &str) -> KvInput {
    KvInput::Put {
        key: key.into(),
        value: value.into(),
    }
}
fn append(key: &str, value: &str) -> KvInput {
    KvInput::Append {
        key: key.into(),
        value: value.into(),
    }
}
fn got(value: &str) -> KvOutput {
    KvOutput::Value(value.into())
}

#[test]
fn kv_partitions_by_key_and_names_the_failing_key() {
    let ok = history(vec![
        (1, put("x", "1"), 0, Some((KvOutput::Ok, 5))),
        (2, append("x", "2"), 1, Some((KvOutput::Ok, 6))),
        (3, get("x"), 7, Some((got("12"), 8))),
        (4, get("y"), 0, Some((got(""), 1))),
        (4, append("y", "a"), 2, Some((KvOutput::Ok, 3))),
        (4, get("y"), 4, Some((got("a"), 5))),
    ]);
    assert!(verdict(&Kv, &ok).is_linearizable());
    assert!(verdict(&KvMap, &ok).is_linearizable());
    let bad = history(vec![
        (1, put("x", "1"), 0, Some((KvOutput::Ok, 5))),
        (2, append("x", "2"), 1, Some((KvOutput::Ok, 6))),
        (3, get("x"), 7, Some((got("21"), 8))),
        (4, append("y", "a"), 2, Some((KvOutput::Ok, 3))),
        (4, get("y"), 4, Some((got("a"), 5))),
    ]);
    let v = verdict(&Kv, &bad);
    let explanation = v.explanation().expect("a violation");
    assert_eq!(explanation.partition.as_deref(), Some("x"));
    assert_eq!(explanation.partition_size, 3);
    // Unpartitioned, the same violation is found in the whole history.
    let whole = verdict(&KvMap, &bad);
    assert_eq!(whole.explanation().unwrap().partition, None);
    assert_eq!(whole.explanation().unwrap().partition_size, 5);
}

#[test]
fn kv_unknown_append_may_apply_once() {
    let once = history(vec![
        (1, append("k", "a"), 0, None),
        (2, get("k"), 10, Some((got("a"), 11))),
        (2, get("k"), 12, Some((got("a"), 13))),
    ]);
    assert!(verdict(&Kv, &once).is_linearizable());
    let twice = history(vec![
        (1, append("k", "a"), 0, None),
        (2, get("k"), 10, Some((got("aa"), 11))),
    ]);
    assert!(verdict(&Kv, &twice).is_violation());
}

#[test]
fn text_appends_share_prefixes_and_compare_by_content() {
    let a = Text::from("ab");
    let b = a.concat(&Text::from("cd")).concat(&Text::from("e"));
    let c = Text::from("a").concat(&Text::from("bcde"));
    assert_eq!(b, c);
    assert_eq!(b, Text::from("abcde"));
    assert_ne!(b, Text::from("abcdf"));
    assert_eq!(b.to_string(), "abcde");
    assert_eq!(b.len(), 5);
    assert_eq!(format!("{b:?}"), "\"abcde\"");
    let mut long = Text::default();
    for i in 0..100_000 {
        long = long.concat(&Text::from(if i % 2 == 0 { "x" } else { "y" }));
    }
    assert_eq!(long.len(), 100_000);
    drop(long); // no stack overflow on a long chain
}

use QueueInput::{Dequeue, Enqueue};

#[test]
fn queue_is_fifo() {
    let ok = history(vec![
        (1, Enqueue(1), 0, Some((QueueOutput::Ok, 1))),
        (1, Enqueue(2), 2, Some((QueueOutput::Ok, 3))),
        (2, Dequeue, 4, Some((QueueOutput::Dequeued(1), 5))),
        (2, Dequeue, 6, Some((QueueOutput::Dequeued(2), 7))),
        (2, Dequeue, 8, Some((QueueOutput::Empty, 9))),
    ]);
    assert!(verdict(&Queue, &ok).is_linearizable());
    let lifo = history(vec![
        (1, Enqueue(1), 0, Some((QueueOutput::Ok, 1))),
        (1, Enqueue(2), 2, Some((QueueOutput::Ok, 3))),
        (2, Dequeue, 4, Some((QueueOutput::Dequeued(2), 5))),
    ]);
    assert!(verdict(&Queue, &lifo).is_violation());
    // Concurrent enqueues may land in either order.
    let concurrent = history(vec![
        (1, Enqueue(1), 0, Some((QueueOutput::Ok, 10))),
        (2, Enqueue(2), 0, Some((QueueOutput::Ok, 10))),
        (3, Dequeue, 11, Some((QueueOutput::Dequeued(2), 12))),
        (3, Dequeue, 13, Some((QueueOutput::Dequeued(1), 14))),
    ]);
    assert!(verdict(&Queue, &concurrent).is_linearizable());
    // Empty while an element was certainly in.
    let empty = history(vec![
        (1, Enqueue(1), 0, Some((QueueOutput::Ok, 1))),
        (2, Dequeue, 2, Some((QueueOutput::Empty, 3))),
    ]);
    assert!(verdict(&Queue, &empty).is_violation());
    // An unknown dequeue may have taken the element, or not.
    let taken = history(vec![
        (1, Enqueue(1), 0, Some((QueueOutput::Ok, 1))),
        (2, Dequeue, 2, None),
        (3, Dequeue, 5, Some((QueueOutput::Empty, 6))),
    ]);
    assert!(verdict(&Queue, &taken).is_linearizable());
    let duplicated = history(vec![
        (1, Enqueue(1), 0, Some((QueueOutput::Ok, 1))),
        (2, Dequeue, 2, None),
        (3, Dequeue, 5, Some((QueueOutput::Dequeued(1), 6))),
        (3, Dequeue, 7, Some((QueueOutput::Dequeued(1), 8))),
    ]);
    assert!(verdict(&Queue, &duplicated).is_violation());
}

#[test]
fn set_add_remove_contains() {
    use SetInput::{Add, Contains, Remove};
    let ok = history(vec![
        (1, Add(1), 0, Some((SetOutput::Ok, 1))),
        (2, Contains(1), 2, Some((SetOutput::Bool(true), 3))),
        (1, Remove(1), 4, Some((SetOutput::Bool(true), 5))),
        (2, Contains(1), 6, Some((SetOutput::Bool(false), 7))),
        (1, Add(2), 8, Some((SetOutput::Bool(true), 9))),
        (1, Add(2), 10, Some((SetOutput::Bool(false), 11))),
    ]);
    assert!(verdict(&Set, &ok).is_linearizable());
    let lost = history(vec![
        (1, Add(1), 0, Some((SetOutput::Ok, 1))),
        (2, Contains(1), 2, Some((SetOutput::Bool(false), 3))),
    ]);
    assert!(verdict(&Set, &lost).is_violation());
    let twice_new = history(vec![
        (1, Add(2), 0, Some((SetOutput::Bool(true), 1))),
        (2, Add(2), 2, Some((SetOutput::Bool(true), 3))),
    ]);
    assert!(verdict(&Set, &twice_new).is_violation());
    let maybe = history(vec![
        (1, Remove(1), 0, None),
        (1, Add(1), 5, Some((SetOutput::Ok, 6))),
        (2, Contains(1), 7, Some((SetOutput::Bool(false), 8))),
    ]);
    assert!(
        verdict(&Set, &maybe).is_linearizable(),
        "the remove may land last"
    );
}

/// A register whose write may be lost (a cache that may drop it).
struct LossyRegister;

impl NondeterministicModel for LossyRegister {
    type State = i64;
    type Input = RegisterInput;
    type Output = RegisterOutput;

    fn init(&self) -> Vec<i64> {
        vec![0]
    }

    fn step(
        &self,
        state: &i64,
        input: &RegisterInput,
        output: Option<&RegisterOutput>,
    ) -> Vec<i64> {
        match (input, output) {
            (Write(v), _) => vec![*v, *state],
            (Read, Some(Value(Some(v)))) if v == state => vec![*state],
            (Read, None) => vec![*state],
            _ => vec![],
        }
    }
}

#[test]
fn nondeterministic_models_through_the_power_set() {
    let lost = history(vec![
        (1, Write(1), 0, Some((Done, 1))),
        (2, Read, 2, Some((Value(Some(0)), 3))),
    ]);
    assert!(verdict(&PowerSet(LossyRegister), &lost).is_linearizable());
    assert!(verdict(&Register { initial: Some(0) }, &lost).is_violation());
    let invented = history(vec![
        (1, Write(1), 0, Some((Done, 1))),
        (2, Read, 2, Some((Value(Some(2)), 3))),
    ]);
    assert!(verdict(&PowerSet(LossyRegister), &invented).is_violation());
}

#[test]
fn a_budget_gives_unknown_and_partitions_take_turns() {
    // Many concurrent writes and a read nobody wrote: refuting it takes a
    // search over all orders of the writes.
    let mut ops: Vec<Spec<RegisterInput, RegisterOutput>> = (0..16)
        .map(|i| (i, Write(i as i64), 0, Some((Done, 100))))
        .collect();
    ops.push((99, Read, 101, Some((Value(Some(1000)), 102))));
    let h = history(ops);
    let tight = CheckOptions {
        budget: Budget::steps(10),
        ..CheckOptions::default()
    };
    assert_eq!(h.check_with(&Register::default(), &tight), Verdict::Unknown);
    assert!(Verdict::Unknown.is_ok());
    assert!(h.check(&Register::default()).is_violation());

    // Key "slow" is linearizable but costly; key "bad" fails at once: the
    // violation is found within a budget the slow key alone would exceed.
    let mut kv: Vec<Spec<KvInput, KvOutput>> = (0..14)
        .map(|i| {
            (
                i,
                append("slow", &i.to_string()),
                0,
                Some((KvOutput::Ok, 100)),
            )
        })
        .collect();
    kv.push((50, get("bad"), 0, Some((got("never written"), 1))));
    let h = history(kv);
    let options = CheckOptions {
        budget: Budget::steps(200_000),
        explain: false,
        ..CheckOptions::default()
    };
    let v = h.check_with(&Kv, &options);
    assert_eq!(v.explanation().unwrap().partition.as_deref(), Some("bad"));
}
