//! The `agent-tck` binary: parse, run, map errors to exit codes (all in `cli`).
//! Exit status: 0 no MUST case failed, 1 a MUST case failed, 2 usage or configuration error.

// mimalloc: the mock fleet allocates a little per request on every worker thread (parsed
// request, generated answer); glibc's malloc spent ~15% of the fleet's CPU under load.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    agent_tck::cli::main(std::env::args_os())
}
