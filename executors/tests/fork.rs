//! Fork isolation: crashes, hangs and exits of the target are observed and
//! classified, and the parent survives them.

use std::time::{Duration, Instant};

use dst_executors::{Executor, Forking, InProcess};
use dst_kernel::{Outcome, Signature};

/// Chooses a way to end by its first decision.
fn target() {
    match dst::random::below(6) {
        1 => panic!("bad state {}", 7),
        2 => std::process::abort(),
        3 => {
            // SAFETY: restoring the default action (std's stack-overflow
            // handler would ignore a raised SIGSEGV), then raising it at
            // ourselves: the child dies of it.
            unsafe {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
                libc::raise(libc::SIGSEGV);
            }
        }
        4 => loop {
            std::thread::sleep(Duration::from_millis(10));
        },
        5 => std::process::exit(3),
        _ => {
            let n = dst::random::below(10);
            dst::assert_always!(n != 9, "n is never 9");
        }
    }
}

fn input(first: u8, second: u8) -> Vec<u8> {
    vec![0, 0, 0, 0, 0, 0, 0, 0, first, second]
}

#[test]
fn each_way_of_ending_is_classified() {
    let mut exec = Forking::new(target, Duration::from_millis(300));
    assert_eq!(exec.run(&input(0, 0)).outcome, Outcome::Pass);

    let failed = exec.run(&input(0, 9));
    assert_eq!(
        failed.signature(),
        Some(Signature::Property {
            message: "n is never 9".into()
        })
    );
    assert_eq!(
        failed.decision_count, 2,
        "the child's decisions reach the parent"
    );

    let panicked = exec.run(&input(1, 0));
    let Outcome::Crash {
        cause,
        message,
        location,
    } = panicked.outcome
    else {
        panic!("{:?}", panicked.outcome)
    };
    assert_eq!((cause.as_str(), message.as_str()), ("panic", "bad state 7"));
    assert!(location.unwrap().contains("executors/tests/fork.rs"));

    for (first, expected) in [(2, "SIGABRT"), (3, "SIGSEGV")] {
        match exec.run(&input(first, 0)).outcome {
            Outcome::Crash { cause, .. } => assert_eq!(cause, expected),
            other => panic!("{other:?}"),
        }
    }

    let start = Instant::now();
    assert_eq!(exec.run(&input(4, 0)).outcome, Outcome::Timeout);
    assert!(start.elapsed() < Duration::from_secs(5));

    match exec.run(&input(5, 0)).outcome {
        Outcome::Crash { cause, message, .. } => {
            assert_eq!(cause, "exit");
            assert!(message.contains("status 3"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn forked_and_in_process_runs_agree() {
    let mut forked = Forking::new(target, Duration::from_secs(5));
    let mut local = InProcess::new(target);
    for seed in [0u64, 11, 12, 13] {
        let input = if seed == 0 {
            vec![]
        } else {
            input(0, seed as u8)
        };
        let a = forked.run(&input);
        let b = local.run(&input);
        assert_eq!(a.trace_hash, b.trace_hash);
        assert_eq!(a.outcome, b.outcome);
    }
}
