//! Times the linearizability checker on Porcupine's test data (the cases of
//! Porcupine's own benchmarks) and on a 100-operation history, and prints a
//! table. Parsing is not timed, as in Porcupine's benchmarks; explanations
//! are off (Porcupine's `CheckEvents` does not compute any) except in the
//! last rows.
//!
//! `cargo bench -p dst-oracles --bench lincheck` (data in
//! `tests/data/porcupine` in this crate, a copy of Porcupine's test data).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dst_oracles::format::parse;
use dst_oracles::models::{Kv, KvMap, Register, RegisterInput, RegisterOutput};
use dst_oracles::{CheckOptions, History, Model, Operation, Outcome, Verdict, check_operations};

fn data_dir() -> PathBuf {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/porcupine"));
    assert!(
        dir.join("expected.tsv").is_file(),
        "the Porcupine test data is missing: expected {}/expected.tsv",
        dir.display()
    );
    dir.to_path_buf()
}

fn load<M: dst_oracles::format::Decode>(
    model: &M,
    file: &str,
) -> Vec<Operation<M::Input, M::Output>> {
    let text = std::fs::read_to_string(data_dir().join(file)).unwrap();
    parse(model, &text, None).unwrap().operations()
}

/// Runs `f` until `min_time` has passed (at least 3 times) and returns the
/// median time of one run.
fn time(min_time: Duration, mut f: impl FnMut()) -> Duration {
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < 3 || (start.elapsed() < min_time && samples.len() < 10_000) {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    samples.sort();
    samples[samples.len() / 2]
}

fn verdict_name(v: &Verdict) -> &'static str {
    match v {
        Verdict::Linearizable => "ok",
        Verdict::Violation(_) => "violation",
        Verdict::Unknown => "unknown",
    }
}

fn row(name: &str, ops: usize, verdict: &str, t: Duration) {
    println!(
        "| {name} | {ops} | {verdict} | {:.3} ms |",
        t.as_secs_f64() * 1e3
    );
}

fn case<M: Model>(
    name: &str,
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    options: &CheckOptions,
    min_time: Duration,
) {
    let verdict = check_operations(model, ops, options);
    let t = time(min_time, || {
        black_box(check_operations(model, black_box(ops), options));
    });
    row(name, ops.len(), verdict_name(&verdict), t);
}

/// A linearizable 100-operation register history of 4 clients: each
/// operation takes effect at a random instant inside its interval.
fn hundred_ops() -> Vec<Operation<RegisterInput, RegisterOutput>> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |bound: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    };
    // (instant of effect, client, call, return, input)
    let mut planned = Vec::new();
    let mut clock = [0u64; 4];
    for i in 0..100 {
        let client = i % 4;
        let call = clock[client] + next(20);
        let ret = call + 1 + next(60);
        clock[client] = ret + 1;
        let input = match next(3) {
            0 => RegisterInput::Read,
            1 => RegisterInput::Write(next(5) as i64),
            _ => RegisterInput::Cas {
                from: next(5) as i64,
                to: next(5) as i64,
            },
        };
        planned.push((call + next(ret - call + 1), client as u64, call, ret, input));
    }
    planned.sort_by_key(|p| p.0);
    let model = Register::default();
    let mut state = model.init();
    let mut history = Vec::new();
    for (_, client, call, ret, input) in planned {
        let output = match input {
            RegisterInput::Read => RegisterOutput::Value(state),
            RegisterInput::Write(_) => RegisterOutput::Ok,
            RegisterInput::Cas { from, .. } if state == Some(from) => RegisterOutput::Ok,
            RegisterInput::Cas { .. } => RegisterOutput::CasFailed,
        };
        state = model.step(&state, &input, Some(&output)).unwrap();
        history.push(Operation {
            client,
            input,
            call,
            outcome: Outcome::Returned { output, time: ret },
        });
    }
    history.sort_by_key(|op| op.call);
    history
}

fn main() {
    // `cargo bench` passes `--bench`; a name filter is not supported.
    let quick = std::env::args().any(|a| a == "--quick");
    let min_time = Duration::from_millis(if quick { 100 } else { 1000 });
    let plain = CheckOptions {
        explain: false,
        ..CheckOptions::default()
    };
    let unpartitioned = CheckOptions {
        partition: false,
        ..plain.clone()
    };
    let register = Register::default();
    let expected = std::fs::read_to_string(data_dir().join("expected.tsv")).unwrap();
    let etcd: Vec<_> = expected
        .lines()
        .filter(|l| l.starts_with("jepsen/"))
        .map(|l| load(&register, l.split('\t').next().unwrap()))
        .collect();

    println!("| case | operations | verdict | time per check |");
    println!("|---|---|---|---|");
    let total_ops = etcd.iter().map(Vec::len).sum();
    let t = time(min_time, || {
        for ops in &etcd {
            black_box(check_operations(&register, black_box(ops), &plain));
        }
    });
    row(&format!("etcd, all {} logs", etcd.len()), total_ops, "-", t);
    case(
        "etcd_002",
        &register,
        &load(&register, "jepsen/etcd_002.log"),
        &plain,
        min_time,
    );
    let kv = Kv;
    for file in ["c50-ok", "c50-bad"] {
        let ops = load(&kv, &format!("kv/{file}.txt"));
        case(
            &format!("kv {file}, partitioned"),
            &kv,
            &ops,
            &plain,
            min_time,
        );
    }
    let whole = KvMap;
    for file in ["c10-ok", "c10-bad"] {
        let ops = load(&whole, &format!("kv/{file}.txt"));
        case(
            &format!("kv {file}, not partitioned"),
            &whole,
            &ops,
            &unpartitioned,
            min_time,
        );
    }
    let hundred = hundred_ops();
    assert!(
        History::from_operations(hundred.clone())
            .check(&register)
            .is_linearizable()
    );
    case(
        "100-op register history",
        &register,
        &hundred,
        &plain,
        min_time,
    );

    // With explanations: what a failing check costs in full.
    let explained = CheckOptions::default();
    let t = time(min_time, || {
        for ops in &etcd {
            black_box(check_operations(&register, black_box(ops), &explained));
        }
    });
    row("etcd, all logs, with explanations", total_ops, "-", t);
    let ops = load(&kv, "kv/c50-bad.txt");
    case(
        "kv c50-bad, with explanation",
        &kv,
        &ops,
        &explained,
        min_time,
    );
}
