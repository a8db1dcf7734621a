//! A frame decoder with two bugs that take the whole process down, the kind
//! an in-process explorer must survive:
//!
//! - a length field of 0xFFFF on a frame marked "continued" makes the decoder
//!   wait for the rest of a frame that never comes: it hangs;
//! - a checksum mismatch on a 13-byte frame of kind 0x7E trips a C-style
//!   `abort()` meant for "impossible" states.
//!
//! The frames come from decisions, as the bytes a network would deliver.

/// One decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: u8,
    pub payload: Vec<u8>,
}

const CONTINUED: u8 = 0x80;

/// Decodes frames until the stream ends.
pub fn decode(stream: &mut impl Iterator<Item = u8>) -> Vec<Frame> {
    let mut frames = Vec::new();
    while let Some(kind) = stream.next() {
        let (Some(hi), Some(lo)) = (stream.next(), stream.next()) else {
            break;
        };
        let len = u16::from_be_bytes([hi, lo]);
        if kind & CONTINUED != 0 && len == 0xFFFF {
            dst::assert_reachable!("a continued frame of maximal length");
            // Bug: waits for the rest of an unbounded frame.
            loop {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let payload: Vec<u8> = stream.by_ref().take(usize::from(len.min(64))).collect();
        let checksum = stream.next().unwrap_or(0);
        let sum = payload.iter().fold(0u8, |a, b| a.wrapping_add(*b));
        if checksum != sum {
            dst::assert_sometimes!(true, "a corrupt frame is rejected");
            if payload.len() == 13 && kind == 0x7E {
                // Bug: an "impossible" state, handled by aborting.
                std::process::abort();
            }
            continue;
        }
        frames.push(Frame { kind, payload });
    }
    frames
}

/// Decodes a stream of random bytes from the decisions.
pub fn simulate() -> usize {
    let len = dst::random::below(48) as usize;
    let mut bytes = vec![0u8; len];
    dst::random::fill(&mut bytes);
    let frames = decode(&mut bytes.into_iter());
    dst::assert_always!(
        frames.iter().all(|f| f.payload.len() <= 64),
        "payloads stay within 64 bytes"
    );
    frames.len()
}
