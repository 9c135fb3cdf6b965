//! Fuzz target `coerce_validate`: see `toolgate_fuzz::coerce_validate` (fuzz/src/lib.rs).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::coerce_validate(data));
