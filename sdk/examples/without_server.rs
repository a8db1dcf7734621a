//! The persistent example's program built without the `forkserver`
//! feature (`cargo build -p dst --example without_server`): it answers its
//! catalog before `main` all the same, and the process executor starts it
//! once per input, as it would a program that does not use the SDK.

fn main() {
    dst::run(|| {
        let first = dst::random::below(100);
        let second = dst::random::below(100);
        dst::assert_always!(
            !(first == 13 && second == 37),
            "the decisions are never 13 then 37"
        );
    });
}
