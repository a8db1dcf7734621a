//! The campaign over time: once a second a client appends a point to
//! `NAME.stats/series.jsonl` beside the campaign file (what `report --html`
//! draws), and writes the same in AFL++'s formats, `plot_data` (a line per
//! point, so `afl-plot NAME.stats out/` draws it) and `fuzzer_stats` (the
//! latest values, rewritten through a temporary file), so tools that read
//! AFL's output directory read dst's.
//!
//! Time `t` runs on across sessions: a new session starts where the
//! series file's last point ended. With `--jobs`, every client appends its
//! own points.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// One point of the series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Seconds of exploring, over every session.
    pub t: f64,
    /// Seconds since the Unix epoch.
    pub unix: u64,
    pub executions: u64,
    pub exec_per_sec: f64,
    pub edges: usize,
    pub corpus: usize,
    pub passing: usize,
    pub failing: usize,
    pub unfound: usize,
    /// Findings that are crashes or failed properties, and timeouts.
    pub crashes: usize,
    pub hangs: usize,
}

/// The statistics folder of a campaign file (`fuzz/campaigns/NAME.json`
/// -> `fuzz/campaigns/NAME.stats`).
pub fn dir_for(campaign_file: &Path) -> PathBuf {
    campaign_file.with_extension("stats")
}

/// The series written so far (none if there is no file; a line that is not
/// a point, as a cut-short last line after `kill -9`, is skipped).
pub fn read_series(dir: &Path) -> Vec<Point> {
    let Ok(text) = std::fs::read_to_string(dir.join("series.jsonl")) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// A client's writer of points.
#[derive(Debug)]
pub struct Stats {
    dir: PathBuf,
    /// `t` of the last point of earlier sessions.
    offset: f64,
    started: Instant,
    start_unix: u64,
    command_line: String,
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

const PLOT_HEADER: &str = "# relative_time, cycles_done, cur_item, corpus_count, pending_total, pending_favs, map_size, saved_crashes, saved_hangs, max_depth, execs_per_sec, total_execs, edges_found, total_crashes, servers_count\n";

impl Stats {
    /// Continues the series in `dir` (created at the first point).
    pub fn open(dir: PathBuf) -> Stats {
        let offset = read_series(&dir).last().map_or(0.0, |p| p.t);
        Stats {
            dir,
            offset,
            started: Instant::now(),
            start_unix: unix_now(),
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
        }
    }

    /// `t` now.
    pub fn now(&self) -> f64 {
        self.offset + self.started.elapsed().as_secs_f64()
    }

    /// Appends `point` (its `t` and `unix` set here) and rewrites
    /// `fuzzer_stats`.
    pub fn record(&mut self, mut point: Point, map_size: usize) -> std::io::Result<()> {
        point.t = self.now();
        point.unix = unix_now();
        std::fs::create_dir_all(&self.dir)?;
        let mut line = serde_json::to_string(&point).expect("a point serializes");
        line.push('\n');
        append(&self.dir.join("series.jsonl"), line.as_bytes(), None)?;
        let coverage = 100.0 * point.edges as f64 / map_size.max(1) as f64;
        let row = format!(
            "{}, 0, 0, {}, 0, 0, {:.2}%, {}, {}, 0, {:.2}, {}, {}, {}, 0\n",
            point.t as u64,
            point.corpus,
            coverage,
            point.crashes,
            point.hangs,
            point.exec_per_sec,
            point.executions,
            point.edges,
            point.crashes,
        );
        append(
            &self.dir.join("plot_data"),
            row.as_bytes(),
            Some(PLOT_HEADER),
        )?;
        let stats = format!(
            "start_time        : {}\nlast_update       : {}\nrun_time          : {}\nfuzzer_pid        : {}\n\
             cycles_done       : 0\nexecs_done        : {}\nexecs_per_sec     : {:.2}\n\
             corpus_count      : {}\nbitmap_cvg        : {:.2}%\nedges_found       : {}\n\
             saved_crashes     : {}\nsaved_hangs       : {}\ntarget_mode       : dst\n\
             command_line      : {}\ndst_passing       : {}\ndst_failing       : {}\n\
             dst_unfound       : {}\n",
            self.start_unix,
            point.unix,
            point.t as u64,
            std::process::id(),
            point.executions,
            point.exec_per_sec,
            point.corpus,
            coverage,
            point.edges,
            point.crashes,
            point.hangs,
            self.command_line,
            point.passing,
            point.failing,
            point.unfound,
        );
        dst_kernel::write_atomic(&self.dir.join("fuzzer_stats"), stats.as_bytes())
    }
}

/// Appends `bytes` to `path`, writing `header` first into a new file.
/// A line cut short (a process killed while writing) is ended first, so
/// it spoils only itself.
fn append(path: &Path, bytes: &[u8], header: Option<&str>) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)?;
    let len = file.metadata()?.len();
    if len == 0 {
        if let Some(header) = header {
            file.write_all(header.as_bytes())?;
        }
    } else {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::End(-1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
        }
    }
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_append_in_afl_formats_and_time_continues_across_sessions() {
        let dir = std::env::temp_dir().join(format!("dst-stats-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut stats = Stats::open(dir.clone());
        let point = Point {
            executions: 1000,
            exec_per_sec: 500.0,
            edges: 42,
            corpus: 7,
            passing: 2,
            failing: 1,
            ..Point::default()
        };
        stats.record(point, 65536).unwrap();
        stats.record(point, 65536).unwrap();
        let series = read_series(&dir);
        assert_eq!(series.len(), 2);
        assert!(series[1].t >= series[0].t);
        assert_eq!(series[0].edges, 42);
        let plot = std::fs::read_to_string(dir.join("plot_data")).unwrap();
        let lines: Vec<&str> = plot.lines().collect();
        assert_eq!(lines.len(), 3, "{plot}");
        assert!(lines[0].starts_with("# relative_time"));
        assert_eq!(lines[1].split(", ").count(), 15, "AFL++'s columns: {plot}");
        let fuzzer_stats = std::fs::read_to_string(dir.join("fuzzer_stats")).unwrap();
        assert!(
            fuzzer_stats.contains("execs_done        : 1000"),
            "{fuzzer_stats}"
        );
        assert!(
            fuzzer_stats.contains("edges_found       : 42"),
            "{fuzzer_stats}"
        );
        // A cut-short line is skipped; a new session starts after the last t.
        append(&dir.join("series.jsonl"), b"{\"t\": 1", None).unwrap();
        let mut later = Stats::open(dir.clone());
        assert!(later.now() >= series[1].t);
        assert_eq!(read_series(&dir).len(), 2);
        later.record(point, 65536).unwrap();
        assert_eq!(
            read_series(&dir).len(),
            3,
            "the cut line spoils only itself"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
