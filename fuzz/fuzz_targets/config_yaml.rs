#![no_main]
// The target itself is agent_tck::fuzz::config_yaml.
libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_tck::fuzz::run("config_yaml", data));
