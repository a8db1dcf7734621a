//! The log formats, their line-numbered errors, the `lincheck` entry and the
//! `assert_linearizable!` macro.

use std::path::PathBuf;

use dst_oracles::format::{events, parse};
use dst_oracles::models::{Kv, Queue, Register, RegisterInput, RegisterOutput, Set};
use dst_oracles::{
    CheckOptions, Format, LincheckError, ModelName, Outcome, Verdict, assert_linearizable,
    lincheck_file, lincheck_str,
};

fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("dst-oracles-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn jepsen_lines_with_tabs_or_spaces() {
    let log = "INFO  jepsen.util - 0\t:invoke\t:write\t3\n\
               INFO  jepsen.util - 1   :invoke :cas    [3 4]\n\
               INFO  jepsen.util - :nemesis\t:info\t:start\tnil\n\
               INFO  jepsen.util - 0\t:ok\t:write\t3\n\
               INFO  jepsen.util - 1\t:fail\t:cas\t[3 4]\n\
               INFO  jepsen.util - 2\t:invoke\t:read\tnil\n\
               INFO  jepsen.util - 2\t:fail\t:read\t:timed-out\n\
               INFO  jepsen.util - 3\t:invoke\t:write\t1\n\
               INFO  jepsen.util - 3\t:info\t:write\t:timed-out\n";
    assert_eq!(Format::detect(log), Ok(Format::Jepsen));
    let h = parse(&Register::default(), log, None).unwrap();
    let ops = h.operations();
    // The failed read is dropped; the failed cas did not find 3.
    assert_eq!(ops.len(), 3);
    assert_eq!(ops[0].input, RegisterInput::Write(3));
    assert_eq!(
        ops[1].outcome,
        Outcome::Returned {
            output: RegisterOutput::CasFailed,
            time: 3
        }
    );
    assert_eq!(ops[2].outcome, Outcome::Unknown);
    // write(3) returned before the cas found something else: not
    // linearizable unless the cas ran first.
    assert!(h.check(&Register::default()).is_linearizable());
}

#[test]
fn errors_name_the_line() {
    let bad_type = "INFO  jepsen.util - 0\t:invoke\t:write\t3\n\n\
                    INFO  jepsen.util - 0\t:done\t:write\t3\n";
    let e = parse(&Register::default(), bad_type, None).unwrap_err();
    assert_eq!(e.line, 3);
    assert_eq!(
        e.to_string(),
        "line 3: expected ':invoke', ':ok', ':fail' or ':info', found ':done'"
    );
    let cases: &[(&str, usize, &str)] = &[
        (
            "INFO  jepsen.util - x\t:invoke\t:read\tnil",
            1,
            "process number",
        ),
        (
            "INFO  jepsen.util - 0\t:invoke\t:write\tfoo",
            1,
            "expected a value",
        ),
        (
            "INFO  jepsen.util - 0\t:invoke\t:enqueue\t1",
            1,
            "'read', 'write' or 'cas'",
        ),
        (
            "INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:invoke\t:read\tnil",
            2,
            "while its 'read' from line 1 is pending",
        ),
        ("INFO  jepsen.util - 0\t:ok\t:read\t1", 1, "has not invoked"),
        (
            "INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:ok\t:write\t1",
            2,
            "completes 'write' but invoked 'read' on line 1",
        ),
        ("INFO  jepsen.util - 0\t:invoke\t:cas\t[1]", 1, "[FROM TO]"),
    ];
    for (text, line, message) in cases {
        let e = parse(&Register::default(), text, Some(Format::Jepsen)).unwrap_err();
        assert_eq!(e.line, *line, "{text}: {e}");
        assert!(e.message.contains(message), "{text}: {e}");
    }
    // An operation name with a JSON-escaped newline is quoted escaped: the
    // error stays one line (found by dst's own `history` target in CI).
    let text = "{\"client\": 0, \"type\": \"invoke\", \"f\": \"  \\nd\", \"key\": \"k\"}";
    let e = parse(&Kv, text, Some(Format::Jsonl)).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(!e.to_string().contains('\n'), "{e}");
    assert!(e.message.contains("found '  \\nd'"), "{e}");
}

#[test]
fn kv_edn_lines() {
    let text = "{:process 1, :type :invoke, :f :put, :key \"k\", :value \"a\"}\n\
                {:process 2, :type :invoke, :f :get, :key \"k\", :value nil}\n\
                {:process 1, :type :ok, :f :put, :key \"k\", :value \"a\"}\n\
                {:process 2, :type :ok, :f :get, :key \"k\", :value \"b\"}\n";
    assert_eq!(Format::detect(text), Ok(Format::Kv));
    let v = parse(&Kv, text, None).unwrap().check(&Kv);
    assert_eq!(v.explanation().unwrap().partition.as_deref(), Some("k"));
    let e = parse(&Kv, "{:process 1, :type :invoke, :f :get}", None).unwrap_err();
    assert_eq!(e.to_string(), "line 1: a kv 'get' needs a key");
    let e = parse(&Kv, "{:process 1, :type :start, :f :get, :key \"k\"}", None).unwrap_err();
    assert!(
        e.message
            .starts_with("expected ':invoke', ':ok', ':fail' or ':info'")
    );
    let e = parse(&Kv, "{:process 1, :type :ok, :f :get, :key \"k\"", None).unwrap_err();
    assert!(e.message.contains("expected '}'"), "{e}");
}

#[test]
fn jsonl_events_with_times() {
    let text = r#"{"client":1,"type":"invoke","f":"enqueue","value":3,"time":10}
{"client":2,"type":"invoke","f":"dequeue","time":11}
{"client":1,"type":"ok","f":"enqueue","value":3,"time":20}
{"client":2,"type":"ok","f":"dequeue","value":3,"time":21}
{"client":2,"type":"invoke","f":"dequeue","time":30}
{"client":2,"type":"ok","f":"dequeue","value":null,"time":31}
"#;
    assert_eq!(Format::detect(text), Ok(Format::Jsonl));
    let h = parse(&Queue, text, None).unwrap();
    assert_eq!(h.operations()[0].call, 10);
    assert!(h.check(&Queue).is_linearizable());
    let raw = events(text, Format::Jsonl).unwrap();
    assert_eq!((raw[3].line, raw[3].time), (4, Some(21)));
    // The dequeue of 3 returned before the enqueue of 3 was invoked.
    let early = r#"{"client":2,"type":"invoke","f":"dequeue","time":1}
{"client":2,"type":"ok","f":"dequeue","value":3,"time":2}
{"client":1,"type":"invoke","f":"enqueue","value":3,"time":5}
{"client":1,"type":"ok","f":"enqueue","time":6}
"#;
    assert!(
        parse(&Queue, early, None)
            .unwrap()
            .check(&Queue)
            .is_violation()
    );
    let set = r#"{"client":1,"type":"invoke","f":"add","value":3}
{"client":1,"type":"ok","f":"add"}
{"client":1,"type":"invoke","f":"contains","value":3}
{"client":1,"type":"ok","f":"contains","value":true}
"#;
    assert!(
        parse(&Set, set, None)
            .unwrap()
            .check(&Set)
            .is_linearizable()
    );
    let cases: &[(&str, &str)] = &[
        (
            r#"{"client":1,"type":"begin","f":"add","value":3}"#,
            "expected 'invoke', 'ok', 'fail' or 'info'",
        ),
        (
            r#"{"type":"invoke","f":"add","value":3}"#,
            "missing \"client\"",
        ),
        (
            r#"{"client":1,"type":"invoke","f":"add","value":3"#,
            "invalid JSON",
        ),
        (
            r#"{"client":1,"type":"invoke","f":"add","value":"x"}"#,
            "expected an integer",
        ),
    ];
    for (line, message) in cases {
        let text =
            format!("{{\"client\":9,\"type\":\"invoke\",\"f\":\"add\",\"value\":1}}\n{line}\n");
        let e = parse(&Set, &text, None).unwrap_err();
        assert_eq!(e.line, 2, "{line}");
        assert!(e.message.contains(message), "{line}: {e}");
    }
    let e = parse(
        &Set,
        "{\"client\":1,\"type\":\"invoke\",\"f\":\"add\",\"value\":1,\"time\":9}\n\
         {\"client\":1,\"type\":\"ok\",\"f\":\"add\",\"time\":3}",
        None,
    )
    .unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.contains("before its invocation"), "{e}");
}

#[test]
fn lincheck_file_reports_verdicts_and_bad_lines() {
    let ok = temp_file(
        "ok.jsonl",
        "{\"client\":1,\"type\":\"invoke\",\"f\":\"write\",\"value\":1}\n\
         {\"client\":1,\"type\":\"ok\",\"f\":\"write\",\"value\":1}\n\
         {\"client\":2,\"type\":\"invoke\",\"f\":\"read\"}\n\
         {\"client\":2,\"type\":\"ok\",\"f\":\"read\",\"value\":1}\n",
    );
    let report = lincheck_file(ModelName::Register, &ok, None).unwrap();
    assert_eq!(
        (
            report.verdict.is_linearizable(),
            report.operations,
            report.partitions
        ),
        (true, 2, 1)
    );
    assert!(
        report
            .to_string()
            .starts_with("2 operations in 1 partition (register model, jsonl format)")
    );

    let bad = temp_file(
        "bad.jsonl",
        "{\"client\":1,\"type\":\"invoke\",\"f\":\"write\",\"value\":1}\n\
         {\"client\":1,\"type\":\"ok\",\"f\":\"write\",\"value\":1}\n\
         {\"client\":2,\"type\":\"invoke\",\"f\":\"read\"}\n\
         {\"client\":2,\"type\":\"ok\",\"f\":\"read\",\"value\":2}\n",
    );
    let report = lincheck_file(ModelName::Register, &bad, Some(Format::Jsonl)).unwrap();
    assert!(report.verdict.is_violation());
    let text = report.to_string();
    assert!(
        text.contains("not linearizable") && text.contains("read() -> 2"),
        "{text}"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["verdict"]["verdict"], "violation");

    let broken = temp_file(
        "broken.jsonl",
        "{\"client\":1,\"type\":\"invoke\",\"f\":\"write\",\"value\":1}\nnot json\n",
    );
    let e = lincheck_file(ModelName::Register, &broken, Some(Format::Jsonl)).unwrap_err();
    assert_eq!(e.line(), Some(2));
    assert!(
        e.to_string().contains("broken.jsonl: line 2: invalid JSON"),
        "{e}"
    );

    let missing = std::env::temp_dir().join("dst-oracles-no-such-file");
    let e = lincheck_file(ModelName::Kv, &missing, None).unwrap_err();
    assert!(matches!(e, LincheckError::Io { .. }) && e.line().is_none());

    let e = lincheck_str(ModelName::Queue, "hello\n", None, &CheckOptions::default()).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.message.starts_with("cannot tell the format"));
    assert_eq!("set".parse::<ModelName>(), Ok(ModelName::Set));
    assert!("stack".parse::<ModelName>().is_err());
    assert_eq!("jsonl".parse::<Format>(), Ok(Format::Jsonl));
    for path in [ok, bad, broken] {
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn assert_linearizable_reports_without_panicking() {
    let mut h = dst_oracles::History::new();
    let w = h.invoke(1, RegisterInput::Write(1), 0);
    h.complete(w, RegisterOutput::Ok, 1);
    let r = h.invoke(2, RegisterInput::Read, 2);
    h.complete(r, RegisterOutput::Value(Some(5)), 3);
    let verdict = h.check(&Register::default());
    assert!(verdict.is_violation());
    // No explorer attached: a failing dst assertion is reported, not fatal.
    assert_linearizable!(verdict, "the register is linearizable");
    assert_linearizable!(&verdict, "the register is linearizable, by reference");
    assert_linearizable!(Verdict::Linearizable, "a linearizable verdict passes");
    let report = lincheck_str(
        ModelName::Register,
        "{\"client\":1,\"type\":\"invoke\",\"f\":\"read\"}\n",
        None,
        &CheckOptions::default(),
    )
    .unwrap();
    assert_linearizable!(report, "a report works too");
}
