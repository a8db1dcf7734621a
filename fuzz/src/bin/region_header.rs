//! Scribbles on a region's header and checks what validation lets through.

use dst::region::{DecisionRecord, Header, Layout, Region, SiteState};

dst_fuzz::target!(|| {
    let layout = Layout {
        input_capacity: 64,
        coverage_size: 64,
        sites_capacity: 4,
        decisions_capacity: 4,
        events_capacity: 256,
    };
    let mut region = Region::new(layout);
    let bytes = region.bytes_mut();
    let len = bytes.len();
    for _ in 0..1 + dst::random::below(3) {
        let at = dst::random::below(size_of::<Header>() as u64) as usize;
        let end = (at + 1 + dst::random::below(8) as usize).min(size_of::<Header>());
        dst::random::fill(&mut bytes[at..end]);
    }
    // SAFETY: the pointer covers `len` bytes owned by `region`, alive here.
    match unsafe { Region::borrowed(bytes.as_mut_ptr(), len) } {
        Ok(accepted) => {
            let view = accepted.view();
            let h = view.header();
            let fits = |offset: u64, size: Option<u64>| {
                size.and_then(|s| offset.checked_add(s))
                    .is_some_and(|end| end <= len as u64)
            };
            let all_fit = fits(h.input_offset, Some(h.input_capacity))
                && fits(h.coverage_offset, Some(h.coverage_size))
                && fits(
                    h.sites_offset,
                    h.sites_capacity.checked_mul(size_of::<SiteState>() as u64),
                )
                && fits(
                    h.decisions_offset,
                    h.decisions_capacity
                        .checked_mul(size_of::<DecisionRecord>() as u64),
                )
                && fits(h.events_offset, Some(h.events_capacity));
            dst::assert_always!(all_fit, "an accepted region's sections fit in it");
            // Reading whatever the per-run fields say must not panic.
            let _ = view.input().len();
            let _ = view.events().len();
            let _ = view.decisions().len();
            dst::assert_sometimes!(
                h.input_len.load(std::sync::atomic::Ordering::Relaxed) > 64,
                "an accepted region claims more input than it holds"
            );
        }
        Err(err) => {
            let text = err.to_string();
            dst::assert_always!(!text.contains('\n'), "a rejection is one line", &text);
            dst::assert_sometimes!(true, "a scribbled header is rejected");
        }
    }
});
