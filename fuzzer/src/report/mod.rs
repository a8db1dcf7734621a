//! The property table: every catalog property with its kind, status, counts
//! and first example or counterexample.

pub mod html;

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

/// The names of the findings the last HTML report showed, kept beside the
/// series (`NAME.stats/reported.json`), so the next report tells new and
/// resolved findings apart.
const REPORTED: &str = "reported.json";

/// The document [`crate::report::html::render`] draws for a campaign: the verdict,
/// the property table, every finding in `findings_dir` (explained, with
/// its replay and debugger commands; new or known against the last
/// report), the findings resolved since, and the series in `stats_dir`.
/// Records what it showed for the next report.
pub fn document(
    name: &str,
    campaign: &Campaign,
    findings_dir: &std::path::Path,
    stats_dir: &std::path::Path,
) -> Value {
    let previous: Vec<String> = std::fs::read(stats_dir.join(REPORTED))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let mut names: Vec<String> = crate::store::known_findings(findings_dir)
        .map(|set| set.into_iter().collect())
        .unwrap_or_default();
    names.sort();
    let mut replays: std::collections::BTreeMap<String, String> = Default::default();
    let findings: Vec<Value> = names
        .iter()
        .filter_map(|finding| {
            let record = dst_kernel::finding::FindingFile::read(&findings_dir.join(finding))?;
            let command = |name: &str| record.reproduce.as_ref().and_then(|r| r.get(name)).cloned();
            let replay = command("explain");
            if let (Some(replay), Some(message)) = (&replay, &record.message) {
                replays.entry(message.clone()).or_insert(replay.clone());
            }
            let decisions: Vec<String> = record
                .decisions
                .iter()
                .map(|d| {
                    let fault = d
                        .fault
                        .as_deref()
                        .map(|f| format!(" (fault \"{f}\")"))
                        .unwrap_or_default();
                    format!(
                        "#{} {:<8} = {} at {}{fault}",
                        d.index,
                        d.kind,
                        d.value,
                        d.location.as_deref().unwrap_or("?"),
                    )
                })
                .collect();
            Some(json!({
                "name": finding,
                "status": if previous.contains(finding) { "known" } else { "new" },
                "kind": record.kind,
                "message": record.message,
                "location": record.location,
                "signature": record.signature.map(|s| s.to_string()),
                "decisions": decisions,
                "faults": record.faults_fired,
                "replay": replay,
                "gdb": command("debugger"),
            }))
        })
        .collect();
    let resolved: Vec<Value> = previous
        .iter()
        .filter(|p| !names.contains(p))
        .map(|p| json!({ "name": p, "message": "no longer in the findings folder" }))
        .collect();
    let mut properties = json(campaign);
    if let Value::Array(rows) = &mut properties {
        for row in rows {
            let replay = row["message"]
                .as_str()
                .and_then(|m| replays.get(m))
                .cloned();
            row["replay"] = json!(replay);
        }
    }
    let series = crate::stats::read_series(stats_dir);
    let (passing, failing, unfound) = counts(campaign);
    let last = series.last();
    let verdict = format!(
        "{}: {failing} failing, {passing} passing, {unfound} unfound properties; {} finding(s), over {} executions",
        if failing > 0 || !findings.is_empty() {
            "failing"
        } else {
            "passing"
        },
        findings.len(),
        campaign.executions
    );
    let _ = std::fs::create_dir_all(stats_dir);
    let _ = dst_kernel::write_atomic(
        &stats_dir.join(REPORTED),
        &serde_json::to_vec(&names).expect("names serialize"),
    );
    json!({
        "title": format!("dst: {name}"),
        "verdict": verdict,
        "failing": failing + findings.len(),
        "summary": {
            "executions": campaign.executions,
            "exec_per_sec": last.map(|p| p.exec_per_sec),
            "edges": last.map(|p| p.edges),
            "corpus": last.map(|p| p.corpus),
            "elapsed_s": last.map(|p| p.t),
        },
        "properties": properties,
        "findings": findings,
        "resolved": resolved,
        "series": series,
        "generated": format!("cargo dst-fuzz report {name} --html"),
    })
}
