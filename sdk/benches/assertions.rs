//! Cost of SDK calls, side by side with std's `assert!` as the anchor.
//!
//! `cargo bench -p dst --bench assertions` — see docs/benchmarks.md.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dst::region::{Layout, Region};

fn quiet(c: &mut Criterion) {
    // Local mode without DST_OUTPUT: a passing assertion is the fast path.
    dst::random::bool();
    let mut g = c.benchmark_group("passing assertion, local mode");
    g.bench_function("std assert! (anchor)", |b| {
        b.iter(|| assert!(black_box(1u64) < 2, "one is less than two"))
    });
    g.bench_function("assert_always!", |b| {
        b.iter(|| dst::assert_always!(black_box(1u64) < 2, "one is less than two"))
    });
    g.bench_function("assert_sometimes!", |b| {
        b.iter(|| dst::assert_sometimes!(black_box(1u64) < 2, "sometimes one is less"))
    });
    g.bench_function("assert_always_less_than!", |b| {
        b.iter(|| dst::assert_always_less_than!(black_box(1u64), 2u64, "numeric less"))
    });
    g.finish();
}

fn attached(c: &mut Criterion) {
    // Under an explorer every evaluation is recorded in the region.
    let region = Region::new(Layout {
        sites_capacity: dst::catalog::CATALOG.len(),
        ..Layout::default()
    });
    let view = region.view();
    view.reset(&7u64.to_le_bytes(), 0);
    // SAFETY: `region` outlives the benchmark; detached at the end.
    unsafe { dst::attach(view.base(), view.sections().total_size) }.unwrap();
    let mut g = c.benchmark_group("attached region");
    g.bench_function("assert_always! (recorded)", |b| {
        b.iter(|| dst::assert_always!(black_box(1u64) < 2, "recorded always"))
    });
    g.bench_function("random::below(1000)", |b| {
        b.iter(|| {
            if view
                .header()
                .decisions
                .load(std::sync::atomic::Ordering::Relaxed)
                > 60_000
            {
                view.reset(&7u64.to_le_bytes(), 0);
            }
            black_box(dst::random::below(black_box(1000)))
        })
    });
    g.finish();
    dst::detach();
}

criterion_group!(benches, quiet, attached);
criterion_main!(benches);
