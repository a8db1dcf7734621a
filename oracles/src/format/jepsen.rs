//! Jepsen log lines: `INFO  jepsen.util - PROCESS :TYPE :F VALUE`.

use super::edn::Reader;
use super::{EventKind, RawEvent};

/// The first whitespace-separated token of `s` and what follows it.
fn token(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    (&s[..end], &s[end..])
}

pub(super) fn event(line: &str) -> Result<Option<RawEvent>, String> {
    let Some((_, rest)) = line.split_once(" - ") else {
        return Err("expected a Jepsen log line such as \
                    'INFO  jepsen.util - 3\t:invoke\t:write\t1'"
            .into());
    };
    let (process, rest) = token(rest);
    if process == ":nemesis" {
        return Ok(None);
    }
    let client = process
        .parse::<u64>()
        .map_err(|_| format!("expected a process number, found '{process}'"))?;
    let (kind, rest) = token(rest);
    let kind = kind
        .strip_prefix(':')
        .and_then(EventKind::from_name)
        .ok_or_else(|| format!("expected ':invoke', ':ok', ':fail' or ':info', found '{kind}'"))?;
    let (f, rest) = token(rest);
    let f = f
        .strip_prefix(':')
        .filter(|f| !f.is_empty())
        .ok_or_else(|| format!("expected an operation such as ':read', found '{f}'"))?;
    let mut reader = Reader::new(rest);
    let value = if reader.at_end() {
        serde_json::Value::Null
    } else {
        reader.value()?
    };
    if !reader.at_end() {
        return Err(format!(
            "unexpected text after the value: '{}'",
            rest.trim()
        ));
    }
    Ok(Some(RawEvent {
        line: 0,
        client,
        kind,
        f: f.to_string(),
        key: None,
        value,
        time: None,
    }))
}
