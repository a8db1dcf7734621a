//! Just enough EDN for Jepsen logs: `nil`, booleans, integers, strings,
//! keywords (kept as strings with their colon), vectors and lists (as
//! arrays), and maps with keyword keys. Commas are whitespace.

use serde_json::Value;

pub(crate) struct Reader<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(text: &'a str) -> Self {
        Self { text, pos: 0 }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        let trimmed = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        self.pos += rest.len() - trimmed.len();
    }

    pub fn at_end(&mut self) -> bool {
        self.skip_space();
        self.pos == self.text.len()
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        if self.rest().starts_with(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// A symbol, keyword or number: up to whitespace or a delimiter.
    fn atom(&mut self) -> &'a str {
        let rest = self.rest();
        let end = rest
            .find(|c: char| c.is_whitespace() || ",[](){}\"".contains(c))
            .unwrap_or(rest.len());
        self.pos += end;
        &rest[..end]
    }

    fn found(&mut self) -> String {
        self.skip_space();
        match self.rest().chars().next() {
            None => "the end of the line".into(),
            Some(_) => format!("'{}'", self.rest().chars().take(20).collect::<String>()),
        }
    }

    pub fn value(&mut self) -> Result<Value, String> {
        self.skip_space();
        if self.eat('"') {
            return self.string().map(Value::String);
        }
        for (open, close) in [('[', ']'), ('(', ')')] {
            if self.eat(open) {
                let mut items = Vec::new();
                while !self.eat(close) {
                    if self.at_end() {
                        return Err(format!("expected '{close}', found the end of the line"));
                    }
                    items.push(self.value()?);
                }
                return Ok(Value::Array(items));
            }
        }
        let atom = self.atom();
        match atom {
            "" => Err(format!("expected a value, found {}", self.found())),
            "nil" => Ok(Value::Null),
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ if atom.starts_with(':') => Ok(Value::String(atom.to_string())),
            _ => atom
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("expected a value, found '{atom}'")),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((_, 'r')) => out.push('\r'),
                    Some((_, c @ ('"' | '\\'))) => out.push(c),
                    Some((_, c)) => return Err(format!("unknown escape '\\{c}' in a string")),
                    None => break,
                },
                c => out.push(c),
            }
        }
        Err("unterminated string".into())
    }

    /// A map `{:key value, ...}`, its keys without their colon.
    pub fn map(&mut self) -> Result<Vec<(&'a str, Value)>, String> {
        if !self.eat('{') {
            return Err(format!("expected '{{', found {}", self.found()));
        }
        let mut entries = Vec::new();
        while !self.eat('}') {
            if self.at_end() {
                return Err("expected '}', found the end of the line".into());
            }
            let key = self.atom();
            let Some(key) = key.strip_prefix(':') else {
                return Err(format!(
                    "expected a keyword key such as ':type', found {}",
                    {
                        self.pos -= key.len();
                        self.found()
                    }
                ));
            };
            entries.push((key, self.value()?));
        }
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_values_and_maps() {
        assert_eq!(
            Reader::new("[1 -2]").value(),
            Ok(serde_json::json!([1, -2]))
        );
        assert_eq!(Reader::new("nil").value(), Ok(Value::Null));
        assert_eq!(
            Reader::new(":timed-out").value(),
            Ok(Value::from(":timed-out"))
        );
        assert_eq!(
            Reader::new(r#""a \"b\"""#).value(),
            Ok(Value::from("a \"b\""))
        );
        let mut r = Reader::new(r#"{:process 3, :f :get, :value "x"}"#);
        let map = r.map().unwrap();
        assert_eq!(map[0], ("process", Value::from(3)));
        assert_eq!(map[1], ("f", Value::from(":get")));
        assert_eq!(map[2], ("value", Value::from("x")));
        assert!(r.at_end());
        assert!(Reader::new("{:a 1").map().is_err());
        assert!(Reader::new("\"open").value().is_err());
        assert!(Reader::new("{process 1}").map().is_err());
    }
}
