//! libFuzzer's command line and ClusterFuzz `.options` files, as a
//! libFuzzer binary linked by `cargo dst-fuzz cc --libfuzzer` reads them
//! (`dst::libfuzzer::Flags`): damaged, they are read or refused with one
//! line, never a panic; what is read means what it says.

use dst::libfuzzer::Flags;
use dst_fuzz_targets::scribble_text;

const ARGS: &[&str] = &[
    "-runs=1000",
    "-max_total_time=60",
    "-seed=7",
    "-max_len=4096",
    "-timeout=25",
    "-dict=fuzz.dict",
    "-artifact_prefix=out/",
    "-exact_artifact_path=crash",
    "-error_exitcode=77",
    "-timeout_exitcode=70",
    "-use_cmp=0",
    "-jobs=4",
    "-print_final_stats=1",
    "-no_such_flag=1",
    "-help=0",
    "corpus/",
    "seed-file",
    "-ignore_remaining_args=1",
];

const OPTIONS: &str = "# options\n[libfuzzer]\nmax_len = 1024\ndict = x.dict ; comment\n\
     timeout = 5\n\n[asan]\ndetect_leaks = 0\n[libfuzzer]\nruns=10\n";

/// Characters that matter to the two syntaxes.
const ALPHABET: &[u8] = b"-=[]#; \n0123456789libfuzzerruns_max";

dst_fuzz::target!(|| {
    let count = dst::random::below(ARGS.len() as u64 + 1) as usize;
    let mut args: Vec<String> = Vec::new();
    for _ in 0..count {
        let arg = dst::random::choose(ARGS).expect("flags");
        args.push(if dst::random::bool() {
            scribble_text(arg, 2, ALPHABET)
        } else {
            arg.to_string()
        });
    }
    let parsed = Flags::parse(&args);
    match &parsed {
        Ok(flags) => {
            let max_len = args
                .iter()
                .take_while(|a| {
                    a.strip_prefix("-ignore_remaining_args=")
                        .is_none_or(|v| v.trim() != "1")
                })
                .filter_map(|a| a.strip_prefix("-max_len="))
                .last();
            if let Some(text) = max_len {
                dst::assert_always!(
                    text.trim().parse::<usize>().ok() == flags.max_len,
                    "-max_len is the last one given",
                    text
                );
            }
            dst::assert_always!(
                flags
                    .inputs
                    .iter()
                    .all(|p| !p.to_string_lossy().starts_with('-')),
                "a flag is never taken for an input"
            );
        }
        Err(error) => {
            let text = error.to_string();
            dst::assert_always!(!text.contains('\n'), "a refused flag gets one line", &text);
            dst::assert_sometimes!(true, "a damaged flag is refused");
        }
    }

    let options = scribble_text(OPTIONS, 4, ALPHABET);
    let mut flags = Flags::default();
    match flags.add_options(&options) {
        Ok(()) => {
            if options == OPTIONS {
                dst::assert_always!(
                    flags.max_len == Some(1024)
                        && flags.runs == Some(10)
                        && flags.timeout == Some(5),
                    "an intact .options file sets its [libfuzzer] flags"
                );
            }
            dst::assert_sometimes!(options != OPTIONS, "a damaged .options file still reads");
        }
        Err(error) => {
            let text = error.to_string();
            dst::assert_always!(
                !text.contains('\n'),
                "a refused .options file gets one line",
                &text
            );
            dst::assert_sometimes!(true, "a damaged .options file is refused");
        }
    }
});
