//! Stop requests from the system: SIGINT (Ctrl+C) and SIGTERM (logout, `kill`, a service
//! manager), the one place both are listened to. The CLI's `worker` and `daemon` and the desktop
//! app all stop gracefully on them (the job in flight finishes or is given back).
//!
//! Listening starts when [`StopSignals::listen`] returns, not when something first waits on it:
//! a command listens before it does or says anything, so a signal sent the moment it reports
//! it started is heard instead of killing the process the hard way.

/// The stop signals, listened to from the moment this was made.
pub struct StopSignals {
    #[cfg(unix)]
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl StopSignals {
    /// Starts listening for SIGTERM and SIGINT (Ctrl+C elsewhere). Must be called within a tokio
    /// runtime. If the signals cannot be listened to, a warning is logged and [`recv`] never
    /// returns (the process then stops the hard way, which loses nothing committed).
    ///
    /// [`recv`]: StopSignals::recv
    pub fn listen() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
                (Ok(term), Ok(int)) => StopSignals {
                    streams: Some((term, int)),
                },
                _ => {
                    tracing::warn!("cannot listen for SIGTERM/SIGINT");
                    StopSignals { streams: None }
                }
            }
        }
        #[cfg(not(unix))]
        {
            StopSignals {}
        }
    }

    /// Returns when the process is asked to stop (again, after the first time).
    pub async fn recv(&mut self) {
        #[cfg(unix)]
        {
            match &mut self.streams {
                Some((term, int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                None => std::future::pending::<()>().await,
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Returns when the process is asked to stop: SIGINT or SIGTERM on Unix, Ctrl+C elsewhere,
/// listening from the first poll (use [`StopSignals::listen`] to listen from an earlier point).
pub async fn stop_requested() {
    StopSignals::listen().recv().await;
}
