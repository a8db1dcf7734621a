//! The cluster simulation: the nominal run is fault-free and in order,
//! faults are decisions, replay reproduces, crashes lose exactly what was
//! not synced.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Mutex;
use std::time::Duration;

use dst::region::{Event, FLAG_TRACE_SITES};
use dst::sim::{self, Config, Sim, SimError, Stats, disk, net, time};
use dst_executors::{Executor, InProcess};

/// Three clients each send 20 numbered messages to a sink that records
/// what arrives; a run returns the arrival log and the stats.
fn traffic() -> Observed {
    let log = Rc::new(RefCell::new(Vec::new()));
    let mut sim = Sim::new();
    let sink_log = log.clone();
    sim.server("sink", move || {
        let log = sink_log.clone();
        async move {
            loop {
                let (from, n): (_, u32) = net::recv().await;
                log.borrow_mut().push((from.name().to_string(), n));
            }
        }
    });
    for c in 0..3 {
        sim.client(&format!("c{c}"), async move {
            for n in 0..20u32 {
                net::send("sink", n);
                time::sleep(Duration::from_millis(30)).await;
            }
        });
    }
    let stats = sim.run().expect("clients finish");
    let log = log.borrow().clone();
    (log, stats)
}

/// What one run of `traffic` saw: arrivals (sender, number) and stats.
type Observed = (Vec<(String, u32)>, Stats);

thread_local! {
    // Per test thread: tests run in parallel, each with its own executor
    // running bodies on its own thread.
    static OBSERVED: RefCell<Vec<Observed>> = const { RefCell::new(Vec::new()) };
}

fn traffic_body() {
    let observed = traffic();
    OBSERVED.with(|o| o.borrow_mut().push(observed));
}

/// Runs `body` under the nominal input (outside an explorer, decisions
/// would come from a fresh seed); a panic in it fails the test.
fn nominally(body: impl FnMut() + 'static) {
    let mut exec = InProcess::new(body);
    let run = exec.run(&[]);
    assert_eq!(run.signature(), None, "the nominal run fails");
}

fn last_observed() -> Observed {
    OBSERVED
        .with(|o| o.borrow_mut().pop())
        .expect("the body ran")
}

#[test]
fn the_nominal_run_delivers_everything_in_order_and_time_is_virtual() {
    let started = std::time::Instant::now();
    nominally(traffic_body);
    let (log, stats) = last_observed();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "no real sleeping"
    );
    assert_eq!(stats.sent, 60);
    assert_eq!(stats.delivered, 60);
    assert_eq!((stats.dropped, stats.duplicated, stats.crashes), (0, 0, 0));
    for c in 0..3 {
        let got: Vec<u32> = log
            .iter()
            .filter(|(from, _)| *from == format!("c{c}"))
            .map(|&(_, n)| n)
            .collect();
        assert_eq!(got, (0..20).collect::<Vec<_>>(), "client c{c} in order");
    }
    // 20 sends 30 ms apart: the last one at 570 ms, then the last sleep.
    assert_eq!(stats.elapsed_nanos, 600_000_000);
}

#[test]
fn faults_are_decisions_and_replay_reproduces() {
    let mut exec = InProcess::new(traffic_body);
    exec.run(&[]);
    let nominal = last_observed();
    let (mut lost, mut dup, mut reordered, mut crashed) = (false, false, false, false);
    for seed in 1..=40u64 {
        let input = seed.to_le_bytes();
        let first = exec.run(&input);
        let a = last_observed();
        let again = exec.run(&input);
        let b = last_observed();
        assert_eq!(first.trace_hash, again.trace_hash, "seed {seed} replays");
        assert_eq!(a, b, "seed {seed}: same deliveries, same stats");
        lost |= a.1.dropped > 0;
        dup |= a.1.duplicated > 0;
        crashed |= a.1.crashes > 0;
        reordered |= a.0.windows(2).any(|w| w[0].0 == w[1].0 && w[0].1 > w[1].1);
        assert_ne!(a.0, Vec::new());
    }
    assert!(
        lost && dup && reordered && crashed,
        "{lost} {dup} {reordered} {crashed}"
    );
    assert_eq!(nominal.0.len(), 60);
}

#[test]
fn a_fired_fault_is_named_in_the_trace() {
    let mut exec = InProcess::new(traffic_body);
    exec.set_flags(FLAG_TRACE_SITES);
    let run = exec.run(&7u64.to_le_bytes());
    let _ = last_observed();
    let faults: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::DecisionSite {
                index,
                name: Some(name),
                ..
            } => {
                let d = &run.decisions[*index as usize];
                let fired = d.kind == dst::decision::Kind::Fault as u8 && d.value != 0;
                fired.then(|| name.clone())
            }
            _ => None,
        })
        .collect();
    assert!(
        faults
            .iter()
            .any(|f| f == "sim: message dropped" || f == "sim: message delayed"),
        "{faults:?}"
    );
}

/// A server that stores one value: `Set(v)` writes it (synced or not) and
/// acknowledges, `Get` replies with what its disk holds.
#[derive(Clone, Debug, PartialEq)]
enum Msg {
    Set(u8, bool),
    Get,
    Ack,
    Value(Option<u8>),
}

fn store(sync_before_ack: bool) -> Option<u8> {
    let result = Rc::new(RefCell::new(None));
    let mut sim = Sim::with_config(Config {
        nemesis_every: None,
        ..Config::default()
    });
    sim.server("store", || async {
        loop {
            let (from, msg): (_, Msg) = net::recv().await;
            match msg {
                Msg::Set(v, sync) => {
                    disk::replace("value", &[v]);
                    if sync {
                        disk::sync("value").await;
                    }
                    net::send(from, Msg::Ack);
                }
                Msg::Get => net::send(from, Msg::Value(disk::read("value").map(|d| d[0]))),
                _ => unreachable!(),
            }
        }
    });
    let out = result.clone();
    sim.client("client", async move {
        net::send("store", Msg::Set(7, sync_before_ack));
        assert_eq!(net::recv::<Msg>().await.1, Msg::Ack);
        sim::crash_node("store");
        time::sleep(Duration::from_millis(5)).await;
        sim::restart_node("store");
        net::send("store", Msg::Get);
        let reply = time::timeout(Duration::from_secs(1), net::recv::<Msg>()).await;
        *out.borrow_mut() = match reply {
            Ok((_, Msg::Value(v))) => v,
            other => panic!("{other:?}"),
        };
        assert_eq!(sim::crashes_of("store"), 1);
    });
    sim.run().unwrap();
    result.take()
}

#[test]
fn a_crash_loses_unsynced_writes_and_keeps_synced_ones() {
    static KEPT: Mutex<Vec<Option<u8>>> = Mutex::new(Vec::new());
    nominally(|| {
        let kept = vec![store(false), store(true)];
        *KEPT.lock().unwrap() = kept;
    });
    assert_eq!(
        *KEPT.lock().unwrap(),
        vec![None, Some(7)],
        "unsynced: gone; synced: kept"
    );
}

#[test]
fn a_partition_blocks_both_ways_until_healed_and_a_oneway_one_way() {
    nominally(partitions);
}

fn partitions() {
    let mut sim = Sim::with_config(Config {
        nemesis_every: None,
        ..Config::default()
    });
    sim.server("b", || async {
        loop {
            let (from, n): (_, u32) = net::recv().await;
            net::send(from, n);
        }
    });
    sim.client("a", async {
        let ask = |n: u32| async move {
            net::send("b", n);
            time::timeout(Duration::from_millis(10), net::recv::<u32>())
                .await
                .map(|(_, m)| m)
        };
        assert_eq!(ask(1).await, Ok(1));
        let p = net::partition(&["a"], &["b"]);
        assert!(ask(2).await.is_err());
        net::heal(p);
        assert_eq!(ask(3).await, Ok(3));
        // Replies blocked only.
        let p = net::partition_oneway(&["b"], &["a"]);
        assert!(ask(4).await.is_err());
        net::heal(p);
        assert_eq!(ask(5).await, Ok(5));
    });
    let stats = sim.run().unwrap();
    assert_eq!(stats.dropped, 2);
}

#[test]
fn a_client_waiting_forever_stalls_the_run() {
    nominally(stall);
}

fn stall() {
    let mut sim = Sim::new();
    sim.client("lonely", async {
        let _: (_, u32) = net::recv().await;
    });
    match sim.run() {
        Err(SimError::Stalled { .. }) => {}
        other => panic!("{other:?}"),
    }
}

static ORDERS: Mutex<Vec<Vec<u32>>> = Mutex::new(Vec::new());

fn racing_tasks() {
    let order = Rc::new(RefCell::new(Vec::new()));
    let mut sim = Sim::new();
    let o = order.clone();
    sim.client("main", async move {
        let handles: Vec<_> = (0..4u32)
            .map(|i| {
                let o = o.clone();
                sim::spawn(async move {
                    sim::yield_now().await;
                    o.borrow_mut().push(i);
                    i
                })
            })
            .collect();
        let outputs: Vec<u32> = sim::join_all(handles)
            .await
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(outputs, vec![0, 1, 2, 3]);
    });
    sim.run().unwrap();
    ORDERS.lock().unwrap().push(order.take());
}

#[test]
fn the_order_ready_tasks_run_in_is_a_decision() {
    let mut exec = InProcess::new(racing_tasks);
    exec.run(&[]);
    assert_eq!(
        ORDERS.lock().unwrap().pop().unwrap(),
        vec![0, 1, 2, 3],
        "nominal: FIFO"
    );
    let mut seen = std::collections::BTreeSet::new();
    for seed in 1..60u64 {
        exec.run(&seed.to_le_bytes());
        seen.insert(ORDERS.lock().unwrap().pop().unwrap());
    }
    assert!(seen.len() > 5, "{seen:?}");
}

#[test]
fn clock_skew_shifts_a_nodes_now_but_not_its_timers() {
    static SKEWS: Mutex<Vec<i128>> = Mutex::new(Vec::new());
    let mut exec = InProcess::new(|| {
        let mut sim = Sim::new();
        sim.client("x", async {
            let before = time::now();
            time::sleep(Duration::from_millis(3)).await;
            assert_eq!(
                before.elapsed(),
                Duration::from_millis(3),
                "timers ignore skew"
            );
            let skew = time::now().as_nanos() as i128 - time::global_now().as_nanos() as i128;
            SKEWS.lock().unwrap().push(skew);
        });
        if let Err(e) = sim.run() {
            panic!("{e:?}");
        }
    });
    for seed in 0..40u64 {
        let input = if seed == 0 {
            vec![]
        } else {
            seed.to_le_bytes().to_vec()
        };
        assert_eq!(exec.run(&input).signature(), None);
    }
    let skews = SKEWS.lock().unwrap().clone();
    assert_eq!(skews[0], 0, "the nominal run has no skew");
    assert!(skews.iter().any(|&s| s != 0), "some runs skew the clock");
    let max = Config::default().max_clock_skew.as_nanos() as i128;
    assert!(skews.iter().all(|s| s.abs() <= max), "{skews:?}");
}

#[test]
fn a_nodes_realtime_clock_starts_at_the_worlds_epoch() {
    static READ: Mutex<Vec<Duration>> = Mutex::new(Vec::new());
    nominally(|| {
        let mut sim = Sim::new();
        sim.client("x", async {
            let since_unix =
                |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).unwrap();
            READ.lock().unwrap().push(since_unix(time::system_now()));
            time::sleep(Duration::from_secs(2)).await;
            READ.lock().unwrap().push(since_unix(time::system_now()));
        });
        if let Err(e) = sim.run() {
            panic!("{e:?}");
        }
    });
    let read = READ.lock().unwrap().clone();
    // 2024-01-01T00:00:00Z, as WASI's and the emulator's realtime clocks.
    let epoch = Duration::from_secs(1_704_067_200);
    assert_eq!(read, [epoch, epoch + Duration::from_secs(2)]);
}
