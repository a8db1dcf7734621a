//! One campaign across machines, on loopback: a node that joins late gets
//! another node's inputs and findings (the vault's codes, which no search
//! guesses: see src/bin/vault.rs); a node killed with -9 takes its
//! processes with it and the other goes on; a node that cannot reach its
//! hub says so in one line and joins once the hub is there.
//!
//! Nothing here waits on a clock for an outcome: each step waits for what
//! it needs (a line, a file), with a deadline only as a safety net.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const VAULT: &str = env!("CARGO_BIN_EXE_vault");
const CODE: u64 = 0x5EC2_E7C0_DE00_0001;
const ALARM: u64 = 0xA1A2_3000_0000_0002;
const DEADLINE: Duration = Duration::from_secs(120);

fn temp(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dst-nodes-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("corpus")).unwrap();
    dir
}

/// A decision input: the seed bytes (zero), then each value big-endian.
fn input(values: &[u64]) -> Vec<u8> {
    let mut bytes = vec![0u8; 8];
    for v in values {
        bytes.extend_from_slice(&v.to_be_bytes());
    }
    bytes
}

/// A running node: `vault fuzz` with its own folders, its stderr collected.
struct Node {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    dir: PathBuf,
}

impl Node {
    fn start(dir: &Path, net: &[&str]) -> Node {
        let mut child = Command::new(VAULT)
            .arg("fuzz")
            .args(net)
            .args(["--json", "--corpus"])
            .arg(dir.join("corpus"))
            .arg("--findings")
            .arg(dir.join("findings"))
            .arg("--campaign")
            .arg(dir.join("campaign.json"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Node {
            child,
            lines,
            dir: dir.to_path_buf(),
        }
    }

    /// The first stderr line containing `text` (waits for it).
    fn line(&self, text: &str) -> String {
        self.line_where(&format!("{text:?}"), |l| l.contains(text))
    }

    /// Waits for a line that `wanted` accepts (`what` says which).
    fn line_where(&self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            if let Some(line) = self.lines.lock().unwrap().iter().find(|l| wanted(l)) {
                return line.clone();
            }
            assert!(
                started.elapsed() < DEADLINE,
                "no line with {what} in:\n{}",
                self.lines.lock().unwrap().join("\n")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn count(&self, text: &str) -> usize {
        let lines = self.lines.lock().unwrap();
        lines.iter().filter(|l| l.contains(text)).count()
    }

    /// Executions in this node's (only) client's campaign part, saved once
    /// a second.
    fn executions(&self) -> u64 {
        std::fs::read(self.dir.join("campaign.json.client1"))
            .ok()
            .and_then(|text| serde_json::from_slice::<serde_json::Value>(&text).ok())
            .and_then(|v| v["executions"].as_u64())
            .unwrap_or(0)
    }

    /// Waits until this node's saved executions pass `count`.
    fn explores_past(&self, count: u64) {
        let started = Instant::now();
        while self.executions() <= count {
            assert!(started.elapsed() < DEADLINE, "the node stopped exploring");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Interrupts the node as Ctrl-C would; its exit status and summary.
    fn interrupt(mut self) -> (i32, serde_json::Value) {
        // SAFETY: kill sends a signal to the node's process.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let status = self.child.wait().unwrap();
        let mut stdout = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        let summary = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "no summary ({e}): {stdout}\n{}",
                self.lines.lock().unwrap().join("\n")
            )
        });
        (status.code().unwrap_or(-1), summary)
    }

    /// kill -9 of the node's main process; waits until every process it
    /// started is gone too.
    fn kill(mut self) {
        let pid = self.child.id() as i32;
        let family = descendants(pid);
        assert!(!family.is_empty(), "a node runs a client process");
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let started = Instant::now();
        while family.iter().any(|p| alive(*p)) {
            assert!(
                started.elapsed() < DEADLINE,
                "processes left behind by a killed node: {family:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Parent pid of `pid`, from /proc.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// Every process below `root`.
fn descendants(root: i32) -> Vec<i32> {
    let pids: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let mut family = vec![root];
    let mut grew = true;
    while grew {
        grew = false;
        for &pid in &pids {
            if !family.contains(&pid) && parent_of(pid).is_some_and(|p| family.contains(&p)) {
                family.push(pid);
                grew = true;
            }
        }
    }
    family.retain(|p| *p != root);
    family
}

/// The port in a hub's "listening on ADDR:PORT" line.
fn port_of(line: &str) -> u16 {
    line.split_whitespace()
        .find_map(|w| w.trim_end_matches(':').rsplit_once(':')?.1.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"))
}

fn has_finding(dir: &Path, message: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir.join("findings")) else {
        return false;
    };
    entries.filter_map(|e| e.ok()).any(|e| {
        std::fs::read_to_string(e.path().join("finding.json")).is_ok_and(|t| t.contains(message))
    })
}

#[test]
fn a_joined_node_gets_inputs_and_findings_and_outlives_its_hub() {
    let hub_dir = temp("hub");
    let open = input(&[CODE]);
    let alarm = input(&[CODE, ALARM]);
    std::fs::write(hub_dir.join("corpus").join("open"), &open).unwrap();
    std::fs::write(hub_dir.join("corpus").join("alarm"), &alarm).unwrap();
    let hub = Node::start(&hub_dir, &["--listen", "0"]);
    let port = port_of(&hub.line("listening on 127.0.0.1:"));

    let leaf_dir = temp("leaf");
    let leaf = Node::start(&leaf_dir, &["--join", &format!("127.0.0.1:{port}")]);
    leaf.line("joined the campaign at");
    // The leaf's corpus receives the input that opens the vault, and its
    // findings the alarm: neither can it find itself.
    let opened = leaf_dir
        .join("corpus")
        .join(format!("{:016x}", dst::hash::fnv64(&open)));
    let started = Instant::now();
    while !(opened.exists() && has_finding(&leaf_dir, "alarm stays silent")) {
        assert!(
            started.elapsed() < DEADLINE,
            "the joined node got nothing: {:?}",
            std::fs::read_dir(leaf_dir.join("corpus"))
                .map(|d| d.count())
                .unwrap_or(0)
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // kill -9 of the hub: its processes go with it, the leaf goes on.
    hub.kill();
    leaf.line("is gone (no heartbeat");
    leaf.line("cannot reach 127.0.0.1:");
    leaf.explores_past(leaf.executions());
    assert_eq!(leaf.count("cannot reach"), 1, "said once, retried quietly");
    let (status, summary) = leaf.interrupt();
    assert_eq!(status, 1, "the leaf holds a finding: {summary}");
    let findings = summary["findings"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .any(|f| f["signature"]["message"] == "the vault's alarm stays silent"),
        "{summary}"
    );
    let campaign: serde_json::Value =
        serde_json::from_slice(&std::fs::read(leaf_dir.join("campaign.json")).unwrap()).unwrap();
    let opens = &campaign["properties"]["the vault opens"];
    assert!(opens["hit_runs"].as_u64().unwrap() > 0, "{opens}");
}

#[test]
fn a_node_waits_for_its_hub_and_the_hub_outlives_it() {
    // A port with nobody on it (yet).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let leaf_dir = temp("early");
    let leaf = Node::start(&leaf_dir, &["--join", &format!("127.0.0.1:{port}")]);
    let line = leaf.line("cannot reach");
    assert!(line.contains("retrying every 5s"), "{line}");
    leaf.explores_past(0);

    let hub_dir = temp("late-hub");
    let hub = Node::start(&hub_dir, &["--listen", &port.to_string()]);
    hub.line("listening on");
    leaf.line("joined the campaign at");
    hub.line("joined the campaign");
    // The status line counts the other nodes, and adds their exec/s to
    // its own once their heartbeats have said how far they got.
    hub.line_where("the nodes' exec/s added", |l| {
        rates(l).is_some_and(|(own, all)| all > own)
    });
    assert_eq!(leaf.count("cannot reach"), 1);

    leaf.kill();
    hub.line("is gone (no heartbeat");
    hub.explores_past(hub.executions());
    let (status, summary) = hub.interrupt();
    assert_eq!(status, 0, "{summary}");
    assert!(summary["executions"].as_u64().unwrap() > 0, "{summary}");
}

/// A status line's own exec/s and its exec/s with the other nodes:
/// `#... exec/s OWN clients 1 nodes 1 (with them exec/s ALL) corpus ...`.
fn rates(line: &str) -> Option<(f64, f64)> {
    let own = line
        .split("exec/s ")
        .nth(1)?
        .split(' ')
        .next()?
        .parse()
        .ok()?;
    let all = line
        .split(" nodes 1 (with them exec/s ")
        .nth(1)?
        .split(')')
        .next()?
        .parse()
        .ok()?;
    Some((own, all))
}
