//! Feeds arbitrary bytes to the campaign loader's parser.

use dst_kernel::Campaign;

dst_fuzz::target!(|| {
    let valid = serde_json::to_vec(&Campaign::new(Vec::new())).expect("serializes");
    let mut bytes = valid.clone();
    // Corrupt a few bytes, truncate sometimes: the file a crash would leave.
    for _ in 0..dst::random::below(4) {
        let at = dst::random::below(bytes.len() as u64) as usize;
        bytes[at] = dst::random::below(256) as u8;
    }
    if dst::random::bool() {
        let keep = dst::random::below(bytes.len() as u64 + 1) as usize;
        bytes.truncate(keep);
    }
    let parsed = serde_json::from_slice::<Campaign>(&bytes);
    dst::assert_sometimes!(parsed.is_ok(), "a campaign file parses");
    dst::assert_sometimes!(parsed.is_err(), "a damaged campaign file is an error");
    if bytes == valid {
        dst::assert_always!(parsed.is_ok(), "an intact campaign file parses");
    }
});
