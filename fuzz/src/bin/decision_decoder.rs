//! The decision decoder: the stream of an input and what an input written
//! out from it reads; value functions as two numbers; and the run record
//! the kernel reads from a region whose decision records, event log and
//! per-run fields the target scribbled on (a target runs in the same
//! memory as them), explained as a finding is.

use std::sync::atomic::Ordering;

use dst::decision::{self, Kind, Stream, Value};
use dst::region::{DecisionRecord, Event, Layout, Region, Step};
use dst_fuzz_targets::scribble;
use dst_kernel::{End, RunRecord, finding};

/// Reads `n` bytes of `input`'s stream in pieces of 1 to 9 bytes, as
/// decisions of different widths do.
fn read_in_pieces(input: &[u8], n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    let mut stream = Stream::new(decision::tail_seed(input));
    let mut at = 0;
    while at < n {
        let width = (1 + dst::random::below(9) as usize).min(n - at);
        stream.read(input, &mut out[at..at + width]);
        at += width;
    }
    debug_assert_eq!(stream.cursor, n as u64);
    out
}

fn stream() {
    let mut input = vec![0u8; dst::random::below(40) as usize];
    dst::random::fill(&mut input);
    let n = dst::random::below(160) as usize;
    let direct = read_in_pieces(&input, n);
    let written = decision::materialize(&input, n as u64);
    let mut again = vec![0u8; n];
    Stream::new(decision::tail_seed(&written)).read(&written, &mut again);
    dst::assert_always!(
        direct == again && written.len() == decision::SEED_BYTES + n,
        "an input written out reads the stream it was written from"
    );
    dst::assert_sometimes!(
        decision::tail_seed(&input) != 0 && n > decision::explicit(&input).len(),
        "a read runs past the explicit bytes into a random tail"
    );
}

fn values() {
    let tag = dst::random::below(6) as u32;
    let parameter = if dst::random::bool() {
        dst::random::u64()
    } else {
        dst::random::below(300)
    };
    let Some(value) = Value::decode(tag, parameter) else {
        dst::assert_sometimes!(true, "a value function that is not one is refused");
        return;
    };
    let (tag, parameter) = value.encode();
    dst::assert_always!(
        Value::decode(tag, parameter) == Some(value),
        "a value function survives encoding"
    );
    let mut bytes = vec![0u8; dst::random::below(9) as usize];
    dst::random::fill(&mut bytes);
    let v = value.of(&bytes);
    let in_range = match value {
        Value::Mod(n) => v < n,
        Value::Bit | Value::AtLeast(_) => v <= 1,
        Value::Be | Value::Hash => true,
    };
    dst::assert_always!(in_range, "a decision's value is in its function's range");
    let byte = dst::random::below(256) as u8;
    if let Some(kind) = Kind::from_u8(byte) {
        dst::assert_always!(kind as u8 == byte, "a decision kind reads back as itself");
    }
}

/// What an honest run of a traced target leaves in its region.
fn honest_run(region: &Region) {
    let view = region.view();
    view.reset(&[], dst::region::FLAG_TRACE_SITES);
    let decisions = dst::random::below(6);
    for index in 0..decisions {
        view.put_decision(
            index,
            DecisionRecord {
                offset: index * 2,
                value: index,
                site: 7,
                width: 2,
                kind: Kind::Below as u8,
                _reserved: 0,
            },
        );
        view.push_event(&Event::DecisionSite {
            index,
            file: "src/lib.rs".into(),
            line: 3,
            column: 9,
            name: (index == 0).then(|| "drop".into()),
        });
    }
    view.header().decisions.store(decisions, Ordering::Release);
    view.push_event(&Event::Step(Step {
        step: 0,
        thread: 1,
        op: "lock".into(),
        file: "src/main.rs".into(),
        line: 12,
        column: 0,
        preempted: Some(0),
    }));
    view.push_event(&Event::Assertion {
        site: 0,
        condition: false,
        details: Some("{\"balance\":-1}".into()),
    });
}

fn record() {
    let layout = Layout {
        input_capacity: 64,
        coverage_size: 64,
        sites_capacity: 4,
        decisions_capacity: 8,
        events_capacity: 512,
    };
    let mut region = Region::new(layout);
    honest_run(&region);
    let sections = *region.view().sections();
    let events_before = region.view().events().len();
    // The target's scribbles: its decision records, its event log, the
    // per-run counters of the header.
    let bytes = region.bytes_mut();
    let records = sections.decisions_offset
        ..sections.decisions_offset + sections.decisions_capacity * size_of::<DecisionRecord>();
    let mut part = bytes[records.clone()].to_vec();
    scribble(&mut part, 3, &[]);
    bytes[records.start..records.start + part.len()].copy_from_slice(&part);
    let log = sections.events_offset..sections.events_offset + sections.events_capacity;
    let mut part = bytes[log.clone()].to_vec();
    scribble(&mut part, 4, &[]);
    bytes[log.start..log.start + part.len()].copy_from_slice(&part);
    let header = region.view().header();
    if dst::random::below(4) == 0 {
        header
            .decisions
            .store(dst::random::u64(), Ordering::Relaxed);
    }
    if dst::random::below(4) == 0 {
        header
            .events_len
            .store(dst::random::u64(), Ordering::Relaxed);
    }
    if dst::random::below(4) == 0 {
        header
            .first_failure
            .store(dst::random::below(64), Ordering::Relaxed);
    }
    let catalog = dst::catalog::sites();
    let record = RunRecord::read(region.view(), End::Ok, &catalog);
    let lines = finding::explain(&record);
    let _ = finding::schedule(&record);
    let description = finding::describe(&record, &catalog);
    dst::assert_always!(
        lines.len() == record.decisions.len()
            && record.decisions.len() <= layout.decisions_capacity,
        "every recorded decision is explained, and no more than the region holds"
    );
    dst::assert_always!(description.is_object(), "a run record is always described");
    dst::assert_sometimes!(
        lines.iter().any(|l| l.kind == "?"),
        "a scribbled decision kind is shown as unknown"
    );
    dst::assert_sometimes!(
        !record.events.is_empty() && record.events.len() < events_before,
        "a damaged event log keeps the events before the damage"
    );
}

dst_fuzz::target!(|| {
    stream();
    values();
    record();
});
