#![no_main]
// The target itself is agent_tck::fuzz::line_reader.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_tck::fuzz::run("line_reader", data));
