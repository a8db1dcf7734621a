//! One JSON object per line:
//! `{"client":1,"type":"invoke","f":"write","key":"x","value":3,"time":17}`.

use serde_json::Value;

use super::{EventKind, RawEvent};

pub(super) fn event(line: &str) -> Result<Option<RawEvent>, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let Value::Object(mut object) = value else {
        return Err("expected a JSON object".into());
    };
    let client = match object.get("client").or_else(|| object.get("process")) {
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("expected a non-negative integer for \"client\", found {v}"))?,
        None => return Err("missing \"client\"".into()),
    };
    let kind = object
        .get("type")
        .and_then(Value::as_str)
        .and_then(EventKind::from_name)
        .ok_or("expected 'invoke', 'ok', 'fail' or 'info' for \"type\"")?;
    let f = match object.get("f") {
        Some(Value::String(f)) if !f.is_empty() => f.clone(),
        Some(v) => return Err(format!("expected an operation name for \"f\", found {v}")),
        None => return Err("missing \"f\"".into()),
    };
    let key = match object.get("key") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(v) => {
            return Err(format!(
                "expected a string or integer for \"key\", found {v}"
            ));
        }
    };
    let time =
        match object.get("time") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| {
                format!("expected a non-negative integer for \"time\", found {v}")
            })?),
        };
    Ok(Some(RawEvent {
        line: 0,
        client,
        kind,
        f,
        key,
        value: object.remove("value").unwrap_or(Value::Null),
        time,
    }))
}
