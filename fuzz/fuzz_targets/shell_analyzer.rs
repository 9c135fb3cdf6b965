//! Fuzz target `shell_analyzer`: see `toolgate_fuzz::shell_analyzer` (fuzz/src/lib.rs).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::shell_analyzer(data));
