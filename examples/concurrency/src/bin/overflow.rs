//! Explorer binary for a stack overflow in a controlled thread: a thread
//! on a 64 KiB stack recurses without bound when a decision says so. The
//! overflow faults on the stack's guard page: a crash finding, replayed
//! like any other, not the explorer's end.

#[inline(never)]
fn descend(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 64]);
    if depth == u64::MAX {
        return frame[0];
    }
    descend(depth + 1) + frame[1]
}

dst_fuzz::target!(|| {
    let deep = dst::thread::Builder::new()
        .name("deep".into())
        .stack_size(64 << 10)
        .spawn(|| {
            if dst::random::below(4) == 3 {
                std::hint::black_box(descend(0));
            }
        })
        .expect("spawn");
    deep.join().expect("the thread returns or crashes the run");
});
