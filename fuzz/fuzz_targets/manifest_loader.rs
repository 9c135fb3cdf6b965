//! Fuzz target `manifest_loader`: see `toolgate_fuzz::manifest_loader` (fuzz/src/lib.rs).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::manifest_loader(data));
