//! The property table: every catalog property with its kind, status, counts
//! and first example or counterexample.

use dst::catalog::SiteInfo;
use dst_kernel::campaign::hex;
use dst_kernel::{Campaign, Status};
use serde_json::{Value, json};

/// (passing, failing, unfound) property counts.
pub fn counts(campaign: &Campaign) -> (usize, usize, usize) {
    let mut c = (0, 0, 0);
    for p in campaign.shown() {
        match p.status() {
            Status::Passing => c.0 += 1,
            Status::Failing => c.1 += 1,
            Status::Unfound => c.2 += 1,
        }
    }
    c
}

fn status_name(status: Status) -> &'static str {
    match status {
        Status::Passing => "passing",
        Status::Failing => "failing",
        Status::Unfound => "unfound",
    }
}

/// The table as JSON: one object per property.
pub fn json(campaign: &Campaign) -> Value {
    Value::Array(
        campaign
            .shown()
            .map(|p| {
                json!({
                    "kind": p.kind.name(),
                    "message": p.message,
                    "status": status_name(p.status()),
                    "must_hold": p.is_must_hold(),
                    "hit_runs": p.hit_runs,
                    "example_runs": p.example_runs,
                    "counterexample_runs": p.counterexample_runs,
                    "evaluations": p.evaluations,
                    "best_guidance": p.best_guidance,
                    "locations": p.locations.iter().map(|l| l.to_string()).collect::<Vec<_>>(),
                    "first_example": p.first_example.as_deref().map(hex::encode),
                    "first_counterexample": p.first_counterexample.as_deref().map(hex::encode),
                })
            })
            .collect(),
    )
}

/// The table as text, one line per property.
pub fn text(campaign: &Campaign) -> String {
    let mut out = format!(
        "{:<8} {:<34} {:>9} {:>9} {:>9}  {}\n",
        "status", "kind", "hits", "held", "broke", "property"
    );
    for p in campaign.shown() {
        let first = match (&p.first_counterexample, &p.first_example) {
            (Some(c), _) => format!("  counterexample {}", short_hex(c)),
            (None, Some(e)) => format!("  example {}", short_hex(e)),
            _ => String::new(),
        };
        out.push_str(&format!(
            "{:<8} {:<34} {:>9} {:>9} {:>9}  \"{}\"{}\n",
            status_name(p.status()),
            p.kind.name(),
            p.hit_runs,
            p.example_runs,
            p.counterexample_runs,
            p.message,
            first
        ));
    }
    let (passing, failing, unfound) = counts(campaign);
    out.push_str(&format!(
        "{passing} passing, {failing} failing, {unfound} unfound, over {} executions\n",
        campaign.executions
    ));
    out
}

fn short_hex(bytes: &[u8]) -> String {
    let text = hex::encode(bytes);
    if text.len() > 40 {
        format!("{}... ({} bytes)", &text[..40], bytes.len())
    } else {
        text
    }
}

/// Prints a catalog: one JSON array, or one line per site.
pub fn print_catalog(sites: &[SiteInfo], as_json: bool) {
    if as_json {
        println!("{}", serde_json::to_string(sites).expect("sites serialize"));
    } else {
        for site in sites {
            println!(
                "{:<34} \"{}\" at {}",
                site.kind.name(),
                site.message,
                site.location
            );
        }
    }
}
