//! Ending a run on a signal.

pub use crate::report::Signal;

/// Completes on Ctrl-C or (on Unix) SIGTERM, saying which came. The handlers are installed when
/// this is called, not when the future is first polled: a banner printed before the first poll
/// would otherwise invite a Ctrl-C that kills the process with no report (and a SIGINT ignored
/// by the parent, as under nohup, would stay ignored until then).
pub(super) fn caught_signal() -> impl std::future::Future<Output = Signal> + Send {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            match (interrupt, terminate) {
                (Ok(mut interrupt), Ok(mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => Signal::Interrupt,
                        _ = terminate.recv() => Signal::Terminate,
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                    Signal::Interrupt
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
            Signal::Interrupt
        }
    }
}

/// [`caught_signal`], for a run that only needs to stop.
pub(super) fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send {
    let caught = caught_signal();
    async move {
        caught.await;
    }
}

/// The one line every command that judges prints when Ctrl-C (or SIGTERM) cut its run short,
/// after writing the report of the `done` cases (the rest are in it, marked not run); it then
/// exits 130.
pub(super) fn say_interrupted(by: Signal, done: usize) {
    crate::errln!(
        "interrupted ({by}): the report has the {} done; the rest are marked not run; exit 130, not a verdict",
        crate::text::count(done as u64, "cases")
    );
}

/// The same for a probe over `--targets`: the targets done have their reports; those running
/// when it came, or not started, are not run.
pub(super) fn say_targets_interrupted(done: usize, of: usize) {
    crate::errln!(
        "interrupted (Ctrl-C): {done} of {} done, their reports written; the rest are not run: run the same command with --resume to finish",
        crate::text::count(of as u64, "targets")
    );
}
