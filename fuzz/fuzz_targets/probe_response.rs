#![no_main]
// The target itself is agent_tck::fuzz::probe_response.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_tck::fuzz::run("probe_response", data));
