//! Campaign bookkeeping: what a campaign has learned across runs, serializable
//! so that a campaign stops and resumes.

use std::collections::BTreeMap;
use std::path::Path;

use dst::catalog::{Claim, Kind, Location, SiteInfo};
use dst::region::{SITE_FALSE, SITE_TRUE, STATUS_CONTROLLED};
use serde::{Deserialize, Serialize};

use crate::RunRecord;

/// Version of the saved campaign format.
pub const CAMPAIGN_VERSION: u32 = 1;

/// A property's verdict over a campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passing,
    Failing,
    /// A must-hit property that no run has reached yet (this counts as failing).
    Unfound,
}

/// One property: every catalog site sharing one message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Property {
    pub kind: Kind,
    pub message: String,
    pub locations: Vec<Location>,
    /// Catalog indices of its sites.
    pub sites: Vec<u32>,
    /// Runs that reached it.
    pub hit_runs: u64,
    /// Runs where it held (for sometimes: was true; for reachable: was reached).
    pub example_runs: u64,
    /// Runs where it broke.
    pub counterexample_runs: u64,
    pub evaluations: u64,
    /// Best guidance score seen (lower is closer to flipping it).
    pub best_guidance: Option<f64>,
    #[serde(with = "hex_opt")]
    pub first_example: Option<Vec<u8>>,
    #[serde(with = "hex_opt")]
    pub first_counterexample: Option<Vec<u8>>,
}

impl Property {
    pub fn status(&self) -> Status {
        match self.kind.claim() {
            Claim::Always if self.counterexample_runs > 0 => Status::Failing,
            Claim::Always if self.hit_runs > 0 => Status::Passing,
            Claim::Always => Status::Unfound,
            Claim::AlwaysOrUnreachable if self.counterexample_runs > 0 => Status::Failing,
            Claim::AlwaysOrUnreachable => Status::Passing,
            Claim::Sometimes | Claim::Reachable if self.example_runs > 0 => Status::Passing,
            Claim::Sometimes | Claim::Reachable if self.hit_runs > 0 => Status::Failing,
            Claim::Sometimes | Claim::Reachable => Status::Unfound,
            Claim::Unreachable if self.hit_runs > 0 => Status::Failing,
            Claim::Unreachable | Claim::None => Status::Passing,
        }
    }

    /// Whether a failure of this property is a finding (a must-hold property broke).
    pub fn is_must_hold(&self) -> bool {
        matches!(
            self.kind.claim(),
            Claim::Always | Claim::AlwaysOrUnreachable | Claim::Unreachable
        )
    }
}

/// What a run added to the campaign.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Novelty {
    /// Coverage map indices seen for the first time.
    pub new_edges: usize,
    /// Properties reached for the first time.
    pub first_hit: Vec<String>,
    /// Properties that held for the first time (a `sometimes` came true).
    pub first_example: Vec<String>,
    /// Properties that broke for the first time.
    pub first_counterexample: Vec<String>,
    /// Properties whose guidance improved.
    pub better_guidance: Vec<String>,
}

impl Novelty {
    pub fn is_interesting(&self) -> bool {
        self.new_edges > 0
            || !self.first_hit.is_empty()
            || !self.first_example.is_empty()
            || !self.first_counterexample.is_empty()
            || !self.better_guidance.is_empty()
    }
}

/// The state of one campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Campaign {
    pub version: u32,
    pub executions: u64,
    /// The target's catalog (faults included).
    pub catalog: Vec<SiteInfo>,
    /// Properties by message.
    pub properties: BTreeMap<String, Property>,
    /// Inputs kept because they added something.
    #[serde(with = "hex_vec")]
    pub corpus: Vec<Vec<u8>>,
    /// Coverage map indices ever seen.
    pub edges: std::collections::BTreeSet<u32>,
    /// Runs that used controlled threads or synchronization: the runs the
    /// SDK's own properties watched.
    #[serde(default)]
    pub controlled_runs: u64,
}

/// Why a saved campaign could not be loaded or saved.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    #[error("cannot read campaign file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write campaign file {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("campaign file {path} is corrupt: {source}")]
    Corrupt {
        path: String,
        source: serde_json::Error,
    },
    #[error(
        "campaign file {path} has format version {found}, this dst reads version {CAMPAIGN_VERSION}"
    )]
    Version { path: String, found: u32 },
}

impl Campaign {
    /// A new campaign over a target with this catalog.
    pub fn new(catalog: Vec<SiteInfo>) -> Campaign {
        let mut properties: BTreeMap<String, Property> = BTreeMap::new();
        for site in catalog.iter().filter(|s| s.kind != Kind::Fault) {
            let p = properties
                .entry(site.message.clone())
                .or_insert_with(|| Property {
                    kind: site.kind,
                    message: site.message.clone(),
                    locations: Vec::new(),
                    sites: Vec::new(),
                    hit_runs: 0,
                    example_runs: 0,
                    counterexample_runs: 0,
                    evaluations: 0,
                    best_guidance: None,
                    first_example: None,
                    first_counterexample: None,
                });
            p.locations.push(site.location.clone());
            p.sites.push(site.index);
        }
        Campaign {
            version: CAMPAIGN_VERSION,
            executions: 0,
            catalog,
            properties,
            corpus: Vec::new(),
            edges: Default::default(),
            controlled_runs: 0,
        }
    }

    /// Folds one run into the campaign and says what was new.
    pub fn observe(&mut self, input: &[u8], record: &RunRecord) -> Novelty {
        // Per property: reached, held, broke, evaluations, best guidance.
        type Seen = (bool, bool, bool, u64, Option<f64>);
        self.executions += 1;
        if record.status & STATUS_CONTROLLED != 0 {
            self.controlled_runs += 1;
        }
        let mut novelty = Novelty::default();
        for &(edge, _) in &record.coverage {
            if self.edges.insert(edge) {
                novelty.new_edges += 1;
            }
        }
        // Aggregate the run's sites per property first: one run counts once.
        // (A run reaches a few sites: a list, not a map, in message order.)
        let mut per_property: Vec<(&str, Seen)> = Vec::with_capacity(record.sites.len());
        for site in &record.sites {
            let Some(info) = self.catalog.get(site.index as usize) else {
                continue;
            };
            if info.kind == Kind::Fault {
                continue;
            }
            let message = info.message.as_str();
            let at = match per_property.iter().position(|(m, _)| *m == message) {
                Some(at) => at,
                None => {
                    per_property.push((message, (false, false, false, 0, None)));
                    per_property.len() - 1
                }
            };
            let entry = &mut per_property[at].1;
            entry.0 = true;
            entry.1 |= site.flags & SITE_TRUE != 0;
            entry.2 |= site.flags & SITE_FALSE != 0;
            entry.3 += site.evaluations;
            if let Some(g) = site.guidance {
                entry.4 = Some(entry.4.map_or(g, |b: f64| b.min(g)));
            }
        }
        per_property.sort_unstable_by_key(|(message, _)| *message);
        for (message, (hit, was_true, was_false, evaluations, guidance)) in per_property {
            let Some(p) = self.properties.get_mut(message) else {
                continue;
            };
            let (example, counterexample) = match p.kind.claim() {
                Claim::Always | Claim::AlwaysOrUnreachable => (hit && !was_false, was_false),
                Claim::Sometimes => (was_true, false),
                Claim::Reachable => (hit, false),
                Claim::Unreachable => (false, hit),
                Claim::None => (false, false),
            };
            if p.hit_runs == 0 {
                novelty.first_hit.push(p.message.clone());
            }
            p.hit_runs += 1;
            p.evaluations += evaluations;
            if example {
                if p.example_runs == 0 {
                    p.first_example = Some(input.to_vec());
                    novelty.first_example.push(p.message.clone());
                }
                p.example_runs += 1;
            }
            if counterexample {
                if p.counterexample_runs == 0 {
                    p.first_counterexample = Some(input.to_vec());
                    novelty.first_counterexample.push(p.message.clone());
                }
                p.counterexample_runs += 1;
            }
            if let Some(g) = guidance
                && p.best_guidance.is_none_or(|best| g < best)
            {
                p.best_guidance = Some(g);
                novelty.better_guidance.push(p.message.clone());
            }
        }
        if novelty.is_interesting() {
            self.corpus.push(input.to_vec());
        }
        novelty
    }

    /// Adds what `other` (a campaign over the same catalog, e.g. another
    /// client's) learned: counts add up, the best guidance wins, first
    /// examples are kept where this campaign has none, corpora and coverage
    /// are united.
    pub fn merge(&mut self, other: &Campaign) {
        self.executions += other.executions;
        self.controlled_runs += other.controlled_runs;
        for (message, theirs) in &other.properties {
            let Some(ours) = self.properties.get_mut(message) else {
                continue;
            };
            ours.hit_runs += theirs.hit_runs;
            ours.example_runs += theirs.example_runs;
            ours.counterexample_runs += theirs.counterexample_runs;
            ours.evaluations += theirs.evaluations;
            ours.best_guidance = match (ours.best_guidance, theirs.best_guidance) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if ours.first_example.is_none() {
                ours.first_example.clone_from(&theirs.first_example);
            }
            if ours.first_counterexample.is_none() {
                ours.first_counterexample
                    .clone_from(&theirs.first_counterexample);
            }
        }
        for input in &other.corpus {
            if !self.corpus.contains(input) {
                self.corpus.push(input.clone());
            }
        }
        self.edges.extend(other.edges.iter().copied());
    }

    /// Properties that are failing or unfound.
    pub fn failing(&self) -> impl Iterator<Item = &Property> {
        self.properties
            .values()
            .filter(|p| p.status() != Status::Passing)
    }

    /// The properties to show a user: the target's own, and the SDK's
    /// ([`dst::catalog::BUILTIN`]: deadlock, step bound, outliving threads)
    /// only once a run used what they watch (controlled threads or
    /// synchronization) or one of them was reached. A target without
    /// threads would otherwise list them as passing, as if they were its own.
    pub fn shown(&self) -> impl Iterator<Item = &Property> {
        let watched = self.controlled_runs > 0;
        self.properties
            .values()
            .filter(move |p| watched || p.hit_runs > 0 || !dst::catalog::is_builtin(&p.message))
    }

    /// Saves atomically: a temporary file beside `path`, synced, then renamed.
    pub fn save(&self, path: &Path) -> Result<(), CampaignError> {
        let text = serde_json::to_vec_pretty(self).expect("a campaign always serializes");
        crate::write_atomic(path, &text).map_err(|source| CampaignError::Write {
            path: path.display().to_string(),
            source,
        })
    }

    /// Loads a campaign saved by [`Campaign::save`].
    pub fn load(path: &Path) -> Result<Campaign, CampaignError> {
        let shown = || path.display().to_string();
        let text = std::fs::read(path).map_err(|source| CampaignError::Read {
            path: shown(),
            source,
        })?;
        #[derive(Deserialize)]
        struct VersionOnly {
            version: u32,
        }
        let version: VersionOnly =
            serde_json::from_slice(&text).map_err(|source| CampaignError::Corrupt {
                path: shown(),
                source,
            })?;
        if version.version != CAMPAIGN_VERSION {
            return Err(CampaignError::Version {
                path: shown(),
                found: version.version,
            });
        }
        serde_json::from_slice(&text).map_err(|source| CampaignError::Corrupt {
            path: shown(),
            source,
        })
    }
}

/// Inputs as lowercase hex strings in JSON.
pub mod hex {
    pub fn encode(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub fn decode(text: &str) -> Result<Vec<u8>, String> {
        if !text.len().is_multiple_of(2) {
            return Err(format!("odd-length hex string of {} digits", text.len()));
        }
        (0..text.len())
            .step_by(2)
            .map(|i| {
                u8::from_str_radix(&text[i..i + 2], 16)
                    .map_err(|_| format!("invalid hex digits {:?} at {i}", &text[i..i + 2]))
            })
            .collect()
    }
}

mod hex_opt {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(bytes) => s.serialize_some(&super::hex::encode(bytes)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| super::hex::decode(&t).map_err(D::Error::custom))
            .transpose()
    }
}

mod hex_vec {
    use serde::{Deserialize, Deserializer, Serializer, de::Error, ser::SerializeSeq};

    pub fn serialize<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for bytes in v {
            seq.serialize_element(&super::hex::encode(bytes))?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|t| super::hex::decode(t).map_err(D::Error::custom))
            .collect()
    }
}
