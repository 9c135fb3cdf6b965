//! Fuzz target `policy_loader`: see `toolgate_fuzz::policy_loader` (fuzz/src/lib.rs).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::policy_loader(data));
