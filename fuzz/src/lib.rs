//! `dst-fuzz-targets`: dst's own fuzz targets, explored with dst itself
//! (`cargo dst-fuzz run NAME`, from the repository root, where `fuzz/` is
//! this crate):
//! - `region_header`: a region whose header bytes were scribbled on must be
//!   rejected with a one-line error, or accepted only if every section fits;
//!   reading an accepted region (input, events, decisions) never panics.
//! - `campaign_file`: any bytes given as a saved campaign are either a
//!   campaign or an error, never a panic.
//! - `guest_elf`: a scribbled ELF is loaded or refused by the emulator's
//!   loader, the KVM executor's check and the catalog readers, never with
//!   a panic.
