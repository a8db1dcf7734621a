//! A corrupt region header is rejected with a clear error, before any write.

use dst::region::{Header, Layout, Region, RegionError};
use std::mem::offset_of;

fn small() -> Layout {
    Layout {
        input_capacity: 64,
        coverage_size: 64,
        sites_capacity: 4,
        decisions_capacity: 4,
        events_capacity: 256,
    }
}

/// Corrupts one field of a fresh region's header, then tries to attach.
fn attach_corrupted(field: usize, value: &[u8]) -> (RegionError, Vec<u8>, Vec<u8>) {
    let mut region = Region::new(small());
    let bytes = region.bytes_mut();
    bytes[field..field + value.len()].copy_from_slice(value);
    let before = bytes.to_vec();
    let len = bytes.len();
    // SAFETY: the pointer covers `len` bytes owned by `region`, alive for the call.
    let err = unsafe { dst::attach(bytes.as_mut_ptr(), len) }.expect_err("corrupt header");
    let after = region.bytes_mut().to_vec();
    (err, before, after)
}

#[test]
fn each_bad_field_is_named() {
    let cases: Vec<(usize, Vec<u8>, &str)> = vec![
        (
            offset_of!(Header, magic),
            b"NOTDST!!".to_vec(),
            "not a dst region",
        ),
        (
            offset_of!(Header, version),
            99u32.to_le_bytes().to_vec(),
            "layout version 99",
        ),
        (
            offset_of!(Header, header_size),
            12u32.to_le_bytes().to_vec(),
            "header is 12 bytes",
        ),
        (
            offset_of!(Header, total_size),
            1u64.to_le_bytes().to_vec(),
            "but",
        ),
        (
            offset_of!(Header, coverage_size),
            u64::MAX.to_le_bytes().to_vec(),
            "section 'coverage'",
        ),
        (
            offset_of!(Header, sites_capacity),
            (u64::MAX / 8).to_le_bytes().to_vec(),
            "section 'sites'",
        ),
        (
            offset_of!(Header, events_offset),
            3u64.to_le_bytes().to_vec(),
            "section 'events'",
        ),
    ];
    for (field, value, expected) in cases {
        let (err, before, after) = attach_corrupted(field, &value);
        let text = err.to_string();
        assert!(
            text.contains(expected),
            "{text:?} should mention {expected:?}"
        );
        assert!(!text.contains('\n'), "one line: {text:?}");
        assert_eq!(before, after, "nothing is written to a rejected region");
    }
}

#[test]
fn short_and_misaligned_regions_are_rejected() {
    let mut region = Region::new(small());
    let bytes = region.bytes_mut();
    // SAFETY: both calls stay within `bytes`.
    let short = unsafe { Region::borrowed(bytes.as_mut_ptr(), 16) };
    assert!(matches!(short, Err(RegionError::TooSmall { len: 16 })));
    // SAFETY: as above.
    let misaligned = unsafe { Region::borrowed(bytes.as_mut_ptr().add(1), bytes.len() - 1) };
    assert!(matches!(misaligned, Err(RegionError::Misaligned)));
}

#[test]
fn a_valid_region_round_trips_events() {
    let region = Region::new(small());
    let view = region.view();
    let event = dst::region::Event::Lifecycle {
        name: "x".into(),
        details: Some("{}".into()),
    };
    view.push_event(&event);
    assert_eq!(view.events(), vec![event.clone()]);
    // Overflow is counted, not written past the end.
    for _ in 0..100 {
        view.push_event(&event);
    }
    assert!(view.events().len() < 100);
    assert_ne!(
        view.header()
            .status
            .load(std::sync::atomic::Ordering::Relaxed)
            & dst::region::STATUS_EVENTS_OVERFLOW,
        0
    );
}

#[test]
fn a_header_written_over_after_attach_moves_no_section() {
    let region = Region::new(Layout {
        sites_capacity: dst::catalog::count() + 8,
        ..small()
    });
    let view = region.view();
    view.reset(&[0, 0, 0, 0, 0, 0, 0, 0, 3], 0);
    // SAFETY: `region` outlives the attachment (detached below).
    unsafe { dst::attach(view.base(), view.sections().total_size) }.unwrap();
    // A target writes garbage over the layout fields, as a buggy C program
    // can (fuzzer/tests/c/misbehave.c does).
    let layout_bytes = std::mem::offset_of!(Header, run_id);
    // SAFETY: the first bytes of the region's own memory, which no
    // reference covers while they are written.
    unsafe { view.base().write_bytes(0xA5, layout_bytes) };
    let drawn = dst::random::below(16);
    dst::assert_always!(drawn == 3, "recorded where it always was");
    dst::detach();
    // The decision came from the input and the assertion landed in the
    // site table, both where validation found them.
    assert_eq!(drawn, 3);
    let index = dst::catalog::sites()
        .iter()
        .position(|s| s.message == "recorded where it always was")
        .unwrap();
    let state = view.site(index).unwrap();
    assert_eq!(
        state.evaluations.load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert_eq!(view.decisions().len(), 1);
    assert_eq!(view.sections().sites_capacity, dst::catalog::count() + 8);
}

#[test]
fn a_segment_is_the_region_and_one_spare_page_nothing_else() {
    let page = dst::shm::page_size();
    let total = small().total_size();
    let segment = dst::region::segment_size(total);
    assert_eq!(segment, total.next_multiple_of(page) + page);
    // A buffer as long as the segment, the region at its start.
    let mut memory = vec![0u64; segment / 8 + page / 8];
    let region = Region::new(small());
    let view = region.view();
    // SAFETY: the header is `size_of::<Header>()` bytes at the region's start.
    let header = unsafe { std::slice::from_raw_parts(view.base(), size_of::<Header>()) };
    let bytes: &mut [u8] = as_bytes(&mut memory);
    bytes[..header.len()].copy_from_slice(header);
    for (len, accepted) in [
        (total, true),
        (segment, true),
        (segment - page, total == segment - page),
        (segment + page, false),
    ] {
        // SAFETY: `len` bytes of `memory`, alive for the call.
        let attached = unsafe { Region::borrowed(bytes.as_mut_ptr(), len) };
        assert_eq!(attached.is_ok(), accepted, "{len} bytes mapped for {total}");
        if let Ok(attached) = attached {
            assert_eq!(
                attached.view().sections().total_size,
                total,
                "the spare page is no part of it"
            );
        }
    }
}

fn as_bytes(words: &mut [u64]) -> &mut [u8] {
    // SAFETY: any u64 memory is valid as bytes; the length is in bytes.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), words.len() * 8) }
}
