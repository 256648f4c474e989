//! A throw-away PgBouncer in transaction mode in front of one database of a test cluster
//! ([`super::postgres::Postgres`]): Debian's `pgbouncer` (scripts/setup installs it), run in the
//! foreground with a config of its own in a temporary directory, on a free port on 127.0.0.1,
//! under a watchdog shell that stops it when this value is dropped or the test process ends
//! however it ends (the shell's stdin, a pipe from the test process, closes).
//! As root it runs as the `postgres` user (PgBouncer refuses to run as root). The package's own
//! service, if it runs, is never used.
//!
//! Few server connections ([`PgBouncer::start`]'s `server_connections`) on purpose: the hub's
//! many client connections then share them, as they do in a real deployment, so anything that
//! leans on a session (a named prepared statement, LISTEN, a session lock) is seen to break.

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use super::postgres::Postgres;

/// A running PgBouncer.
pub struct PgBouncer {
    watchdog: Option<(Child, ChildStdin)>,
    dir: PathBuf,
    port: u16,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The `postgres` user's ids, when the tests run as root.
fn postgres_ids() -> Option<(u32, u32)> {
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root {
        return None;
    }
    let id = |flag: &str| -> u32 {
        let out = Command::new("id").args([flag, "postgres"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    Some((id("-u"), id("-g")))
}

fn binary() -> PathBuf {
    ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!("pgbouncer is not installed: install Debian's `pgbouncer` package (scripts/setup does)")
        })
}

impl PgBouncer {
    /// Starts a PgBouncer in transaction mode in front of database `db` of `pg`, with at most
    /// `server_connections` connections to PostgreSQL. With `statement_timeout`, each server
    /// connection gets one (20 s) from PgBouncer's `connect_query`, as docs/hub.md shows.
    pub fn start(pg: &Postgres, db: &str, server_connections: u32, statement_timeout: bool) -> PgBouncer {
        let connect_query = if statement_timeout {
            " connect_query='SET statement_timeout = 20000'"
        } else {
            ""
        };
        let ids = postgres_ids();
        let dir = std::env::temp_dir().join(format!(
            "sitetrail-pgbouncer-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        if let Some((uid, gid)) = ids {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
        }
        std::fs::write(dir.join("users.txt"), "\"postgres\" \"\"\n").unwrap();
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port();
            let config = dir.join("pgbouncer.ini");
            std::fs::write(
                &config,
                format!(
                    "[databases]\n\
                     {db} = host=127.0.0.1 port={pg_port} dbname={db}{connect_query}\n\
                     [pgbouncer]\n\
                     listen_addr = 127.0.0.1\n\
                     listen_port = {port}\n\
                     unix_socket_dir =\n\
                     auth_type = trust\n\
                     auth_file = {users}\n\
                     pool_mode = transaction\n\
                     default_pool_size = {server_connections}\n\
                     max_client_conn = 1000\n\
                     logfile = {log}\n\
                     pidfile = {pid}\n",
                    pg_port = pg.port(),
                    users = dir.join("users.txt").display(),
                    log = dir.join("pgbouncer.log").display(),
                    pid = dir.join("pgbouncer.pid").display(),
                ),
            )
            .unwrap();
            let mut command = Command::new("sh");
            command
                .args([
                    "-c",
                    r#""$PGBOUNCER" "$CONFIG" & bouncer=$!
                       cat >/dev/null
                       kill "$bouncer"; wait "$bouncer""#,
                ])
                .env("PGBOUNCER", binary())
                .env("CONFIG", &config)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if let Some((uid, gid)) = ids {
                command.uid(uid).gid(gid);
            }
            let mut child = command.spawn().expect("start pgbouncer (under sh)");
            let stdin = child.stdin.take().unwrap();
            let end = Instant::now() + Duration::from_secs(10);
            loop {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return PgBouncer {
                        watchdog: Some((child, stdin)),
                        dir,
                        port,
                    };
                }
                if child.try_wait().unwrap().is_some() || Instant::now() > end {
                    drop(stdin);
                    let _ = child.wait();
                    last = std::fs::read_to_string(dir.join("pgbouncer.log")).unwrap_or_default();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("pgbouncer did not start on a free port in 5 tries; its log:\n{last}");
    }

    /// The URL of the database through PgBouncer.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default()
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.watchdog.take() {
            drop(stdin);
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
