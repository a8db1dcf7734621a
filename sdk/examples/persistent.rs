//! A Rust program that uses only the `dst` crate (not the explorer) and can
//! still be explored as a separate process:
//! `cargo dst-fuzz run --cmd -- target/debug/examples/persistent`.
//! Before `main`, the SDK starts a fork server when an explorer asks for
//! one; `dst::run` then runs the body once per input in one process.

fn main() {
    let mut runs = 0u64;
    dst::run(|| {
        runs += 1;
        let first = dst::random::below(100);
        let second = dst::random::below(100);
        dst::assert_sometimes!(first > 90, "the first decision is sometimes large");
        dst::assert_always!(
            !(first == 13 && second == 37),
            "the decisions are never 13 then 37"
        );
    });
    // Runs counted here span inputs only in persistent mode.
    dst::assert_always!(runs >= 1, "the body ran");
}
