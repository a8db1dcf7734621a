//! Status for parallel campaigns: clients send their property counts as
//! LibAFL user stats; the broker's [`StatusMonitor`] prints one line per
//! second with the aggregate, and keeps the last totals for the summary.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dst_kernel::Campaign;
use libafl::monitors::Monitor;
use libafl::monitors::stats::{AggregatorOps, ClientStatsManager, UserStats, UserStatsValue};
use libafl_bolts::ClientId;

/// The user stats a client reports.
pub fn user_stats<M: FromIterator<(Cow<'static, str>, UserStats)>>(
    campaign: &Campaign,
    edges: usize,
    findings: usize,
) -> M {
    let (passing, failing, unfound) = crate::report::counts(campaign);
    [
        ("dst_passing", passing, AggregatorOps::Max),
        ("dst_failing", failing, AggregatorOps::Max),
        ("dst_unfound", unfound, AggregatorOps::Min),
        ("dst_edges", edges, AggregatorOps::Max),
        ("dst_findings", findings, AggregatorOps::Max),
    ]
    .into_iter()
    .map(|(name, value, op)| {
        (
            Cow::Borrowed(name),
            UserStats::new(UserStatsValue::Number(value as u64), op),
        )
    })
    .collect()
}

/// Totals as last seen by the monitor.
#[derive(Debug, Clone, Copy, Default)]
pub struct Totals {
    pub executions: u64,
    pub corpus: u64,
    pub clients: usize,
    pub edges: u64,
}

/// What a node hears of the other nodes of a campaign across machines,
/// for its status line: how many are live, and their exec/s together.
#[derive(Debug, Default)]
pub struct Nodes {
    pub live: AtomicUsize,
    /// Executions per second of the live nodes, summed.
    pub exec_per_sec: AtomicU64,
}

/// Prints the aggregate status line at most once per second.
pub struct StatusMonitor {
    print: bool,
    last: Option<Instant>,
    totals: Arc<Mutex<Totals>>,
    /// Other machines this node hears from (in a campaign across machines).
    nodes: Option<Arc<Nodes>>,
}

impl StatusMonitor {
    pub fn new(print: bool, totals: Arc<Mutex<Totals>>) -> StatusMonitor {
        StatusMonitor {
            print,
            last: None,
            totals,
            nodes: None,
        }
    }

    /// Also shows the other nodes `nodes` counts, and the exec/s of this
    /// node and theirs together.
    pub fn with_nodes(mut self, nodes: Arc<Nodes>) -> StatusMonitor {
        self.nodes = Some(nodes);
        self
    }
}

impl Monitor for StatusMonitor {
    fn display(
        &mut self,
        stats: &mut ClientStatsManager,
        _event_msg: &str,
        _sender_id: ClientId,
    ) -> Result<(), libafl::Error> {
        let (total_execs, execs_per_sec, client_stats_count, corpus_size) = {
            let g = stats.global_stats();
            (
                g.total_execs,
                g.execs_per_sec,
                g.client_stats_count,
                g.corpus_size,
            )
        };
        let get = |name: &str| match stats.aggregated().get(name) {
            Some(UserStatsValue::Number(n)) => *n,
            _ => 0,
        };
        // Clients that exit drop out of the stats: keep the highest totals seen.
        if let Ok(mut totals) = self.totals.lock() {
            totals.executions = totals.executions.max(total_execs);
            totals.corpus = totals.corpus.max(corpus_size);
            totals.clients = totals.clients.max(client_stats_count);
            totals.edges = totals.edges.max(get("dst_edges"));
        }
        if !self.print
            || self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return Ok(());
        }
        self.last = Some(Instant::now());
        let nodes = self.nodes.as_ref().map_or(String::new(), |n| {
            let others = n.exec_per_sec.load(Ordering::Relaxed) as f64;
            format!(
                " nodes {} (with them exec/s {:.0})",
                n.live.load(Ordering::Relaxed),
                execs_per_sec + others
            )
        });
        eprintln!(
            "#{} exec/s {:.0} clients {}{nodes} corpus {} edges {} properties {} passing, {} failing, {} unfound findings {}",
            total_execs,
            execs_per_sec,
            client_stats_count,
            corpus_size,
            get("dst_edges"),
            get("dst_passing"),
            get("dst_failing"),
            get("dst_unfound"),
            get("dst_findings"),
        );
        Ok(())
    }
}

/// Edges covered so far in this campaign (0 for an uninstrumented binary,
/// whose stand-in map is never written).
pub(crate) fn covered<S: libafl::HasNamedMetadata>(state: &S) -> usize {
    state
        .named_metadata::<libafl::feedbacks::MapFeedbackMetadata<u8>>("edges")
        .map_or(0, |m| m.num_covered_map_indexes)
}
