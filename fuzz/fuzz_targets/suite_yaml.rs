#![no_main]
// The target itself is agent_tck::fuzz::suite_yaml.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_tck::fuzz::run("suite_yaml", data));
