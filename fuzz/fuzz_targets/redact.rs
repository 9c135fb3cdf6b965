//! Fuzz target `redact`: see `toolgate_fuzz::redact` (fuzz/src/lib.rs).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::redact(data));
