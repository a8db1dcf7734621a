//! `dst-oracles`' history readers over damaged logs: Jepsen log lines, EDN
//! maps and JSON lines, for each model, with the format given or
//! detected. A log parses or is refused with an error naming a line of the
//! log; what parses is checked for linearizability within a small budget.

use dst_fuzz_targets::scribble_text;
use dst_oracles::{Budget, CheckOptions, Format, ModelName, lincheck_str};

/// Characters that matter to the three formats.
const ALPHABET: &[u8] = b"{}[]:,\" \t\n-0123456789nilokfailinfoinvoke";

/// A short valid log of `model` in `format`.
fn log(model: ModelName, format: Format) -> String {
    // (client, type, f, key, value) in JSON; the other formats are made from it.
    let events: &[(u64, &str, &str, &str)] = match model {
        ModelName::Register => &[
            (0, "invoke", "write", "3"),
            (1, "invoke", "read", "null"),
            (0, "ok", "write", "3"),
            (1, "ok", "read", "3"),
            (2, "invoke", "cas", "[2, 4]"),
            (2, "fail", "cas", "[2, 4]"),
        ],
        ModelName::Kv => &[
            (0, "invoke", "put", "\"x\""),
            (0, "ok", "put", "\"x\""),
            (1, "invoke", "append", "\"y\""),
            (1, "ok", "append", "\"y\""),
            (0, "invoke", "get", "null"),
            (0, "ok", "get", "\"xy\""),
        ],
        ModelName::Queue => &[
            (0, "invoke", "enqueue", "1"),
            (1, "invoke", "dequeue", "null"),
            (0, "ok", "enqueue", "1"),
            (1, "ok", "dequeue", "1"),
        ],
        ModelName::Set => &[
            (0, "invoke", "add", "5"),
            (0, "ok", "add", "5"),
            (1, "invoke", "contains", "5"),
            (1, "ok", "contains", "true"),
        ],
    };
    let key = matches!(model, ModelName::Kv);
    let mut out = String::new();
    for (client, kind, f, value) in events {
        let line = match format {
            Format::Jsonl => {
                let key = if key { ", \"key\": \"k\"" } else { "" };
                format!(
                    "{{\"client\": {client}, \"type\": \"{kind}\", \"f\": \"{f}\"{key}, \"value\": {value}}}"
                )
            }
            Format::Kv => {
                let value = if *value == "null" { "nil" } else { value };
                let value = value.replace(',', "");
                let key = if key { ", :key \"k\"" } else { "" };
                format!("{{:process {client}, :type :{kind}, :f :{f}{key}, :value {value}}}")
            }
            Format::Jepsen => {
                let value = if *value == "null" { "nil" } else { value };
                format!(
                    "INFO  jepsen.util - {client}\t:{kind}\t:{f}\t{}",
                    value.replace(',', "")
                )
            }
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

dst_fuzz::target!(|| {
    let model = *dst::random::choose(&ModelName::ALL).expect("models");
    let format =
        *dst::random::choose(&[Format::Jsonl, Format::Kv, Format::Jepsen]).expect("formats");
    let valid = log(model, format);
    let text = scribble_text(&valid, 4, if dst::random::bool() { ALPHABET } else { &[] });
    let given = if dst::random::bool() {
        Some(format)
    } else {
        None
    };
    let options = CheckOptions {
        budget: Budget::steps(20_000),
        explain_budget: Some(Budget::steps(20_000)),
        ..CheckOptions::default()
    };
    match lincheck_str(model, &text, given, &options) {
        Ok(report) => {
            dst::assert_sometimes!(text != valid, "a damaged log still parses");
            dst::assert_sometimes!(
                report.verdict.is_violation(),
                "a damaged log is a history that is not linearizable"
            );
            if text == valid {
                dst::assert_always!(
                    report.verdict.is_linearizable(),
                    "each intact log is linearizable",
                    &format!("{model} {format}")
                );
            }
        }
        Err(error) => {
            let lines = text.lines().count().max(1);
            dst::assert_always!(
                error.line >= 1 && error.line <= lines && !error.message.contains('\n'),
                "a refused log names one of its lines, in one line",
                &format!("line {} of {lines}: {}", error.line, error.message)
            );
            dst::assert_sometimes!(true, "a damaged log is refused");
        }
    }
});
