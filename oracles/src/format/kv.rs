//! One EDN map per line: `{:process 9, :type :invoke, :f :append, :key "0",
//! :value "x 9 0 y"}`.

use serde_json::Value;

use super::edn::Reader;
use super::{EventKind, RawEvent};

pub(super) fn event(line: &str) -> Result<Option<RawEvent>, String> {
    let mut reader = Reader::new(line);
    let map = reader.map()?;
    if !reader.at_end() {
        return Err("unexpected text after the map".into());
    }
    let field = |name: &str| map.iter().find(|(k, _)| *k == name).map(|(_, v)| v);
    let keyword = |name: &str| -> Result<&str, String> {
        match field(name) {
            Some(Value::String(s)) if s.starts_with(':') => Ok(&s[1..]),
            Some(v) => Err(format!("expected a keyword for :{name}, found {v}")),
            None => Err(format!("missing :{name}")),
        }
    };
    let client = match field("process") {
        Some(Value::String(s)) if s == ":nemesis" => return Ok(None),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("expected a process number for :process, found {v}"))?,
        None => return Err("missing :process".into()),
    };
    let kind = match field("type") {
        Some(Value::String(s)) => s.strip_prefix(':').and_then(EventKind::from_name),
        _ => None,
    }
    .ok_or("expected ':invoke', ':ok', ':fail' or ':info' for :type")?;
    let key = match field("key") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(v) => return Err(format!("expected a string or integer for :key, found {v}")),
    };
    let time = match field("time") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .ok_or_else(|| format!("expected a non-negative integer for :time, found {v}"))?,
        ),
    };
    Ok(Some(RawEvent {
        line: 0,
        client,
        kind,
        f: keyword("f")?.to_string(),
        key,
        value: field("value").cloned().unwrap_or(Value::Null),
        time,
    }))
}
