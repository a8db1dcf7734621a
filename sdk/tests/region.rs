//! A corrupt region header is rejected with a clear error, before any write.

use dst::region::{Header, Layout, OwnedRegion, RegionError, RegionRef};
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
    let mut region = OwnedRegion::new(small());
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
    let mut region = OwnedRegion::new(small());
    let bytes = region.bytes_mut();
    // SAFETY: both calls stay within `bytes`.
    let short = unsafe { RegionRef::new(bytes.as_mut_ptr(), 16) };
    assert!(matches!(short, Err(RegionError::TooSmall { len: 16 })));
    // SAFETY: as above.
    let misaligned = unsafe { RegionRef::new(bytes.as_mut_ptr().add(1), bytes.len() - 1) };
    assert!(matches!(misaligned, Err(RegionError::Misaligned)));
}

#[test]
fn a_valid_region_round_trips_events() {
    let region = OwnedRegion::new(small());
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
