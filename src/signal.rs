//! Stop requests from the system: SIGINT (Ctrl+C) and SIGTERM (logout, `kill`, a service
//! manager), the one place both are listened to. The CLI's `worker` and `daemon` and the desktop
//! app all stop gracefully on them (the job in flight finishes or is given back).

/// Returns when the process is asked to stop: SIGINT or SIGTERM on Unix, Ctrl+C elsewhere. If
/// the signals cannot be listened to, it never returns (the process then stops the hard way,
/// which loses nothing committed).
pub async fn stop_requested() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => {
                tracing::warn!("cannot listen for SIGTERM/SIGINT");
                std::future::pending::<()>().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
