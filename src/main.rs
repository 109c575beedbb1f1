//! The `agent-tck` binary: parse, run, map errors to exit codes (all in `cli`).
//! Exit status: 0 no MUST case failed, 1 a MUST case failed, 2 usage or configuration error.

fn main() -> std::process::ExitCode {
    agent_tck::cli::main(std::env::args_os())
}
