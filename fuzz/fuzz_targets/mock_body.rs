#![no_main]
// The target itself is agent_tck::fuzz::mock_body.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_tck::fuzz::run("mock_body", data));
