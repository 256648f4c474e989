//! A throw-away PostgreSQL cluster for tests: `initdb` in a temporary directory, started on a
//! free port on 127.0.0.1 with its socket in that directory, stopped and removed when dropped
//! (or, for the cluster shared by a test binary, when the test process ends, however it ends).
//! The hub's tests (`hub/tests/`) and the library's sync tests include this file with
//! `#[path = ...]`, as they include `poll.rs`.
//!
//! It never uses the system's own cluster (Debian's `postgresql` package may leave one running
//! on 5432, or stopped; either is fine). PostgreSQL refuses to run as root, so as root the
//! cluster's directory belongs to the `postgres` user and `initdb`/`pg_ctl` run through
//! `runuser -u postgres --`; as anyone else they run directly. The server binaries are found in
//! `$SITETRAIL_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin`, else on `PATH`.
//!
//! [`Postgres::start`] tunes the cluster for tests (`fsync=off`, no full-page writes: a crash of
//! the machine may lose it, which a test cluster may); [`Postgres::start_durable`] keeps
//! PostgreSQL's defaults, for benchmarks. Only this file's process ends it: a watchdog child
//! holds a pipe from the test process and stops the cluster when the pipe closes.

#![allow(dead_code)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// A running cluster. Every database it serves is reached as the `postgres` superuser over TCP
/// on 127.0.0.1 (trust authentication: it listens on the loopback only, for this test run).
pub struct Postgres {
    dir: PathBuf,
    data: PathBuf,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
    durable: bool,
    watchdog: Mutex<Option<(Child, ChildStdin)>>,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The cluster shared by every test of this process (one database per test keeps them apart).
pub fn shared() -> &'static Postgres {
    static SHARED: OnceLock<Postgres> = OnceLock::new();
    SHARED.get_or_init(Postgres::start)
}

fn is_root() -> bool {
    // The owner of /proc/self is the process's effective user.
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// Where `initdb` and `pg_ctl` are.
fn server_binaries() -> PathBuf {
    if let Some(dir) = std::env::var_os("SITETRAIL_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return bin;
    }
    if let Ok(out) = Command::new("sh").args(["-c", "command -v initdb"]).output() {
        let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if out.status.success() && !path.is_empty() {
            if let Some(parent) = Path::new(&path).parent() {
                return parent.to_owned();
            }
        }
    }
    panic!(
        "PostgreSQL's server programs (initdb, pg_ctl) were not found in /usr/lib/postgresql/*/bin or on PATH: \
         install Debian's `postgresql` package (scripts/setup does), or set SITETRAIL_PG_BIN to their directory"
    );
}

fn id_of(flag: &str) -> u32 {
    let out = Command::new("id")
        .args([flag, "postgres"])
        .output()
        .expect("run id");
    assert!(
        out.status.success(),
        "running as root, the tests start PostgreSQL as the `postgres` user, which does not exist: \
         install Debian's `postgresql` package (scripts/setup does)"
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a user id")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind a free port")
        .local_addr()
        .unwrap()
        .port()
}

fn check(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Postgres {
    /// Makes and starts a new cluster tuned for tests (no fsync). Panics with the reason if it
    /// cannot.
    pub fn start() -> Postgres {
        Postgres::start_tuned(false)
    }

    /// A cluster with PostgreSQL's default durability (fsync, full-page writes), for
    /// benchmarks whose figures should include what a commit costs.
    pub fn start_durable() -> Postgres {
        Postgres::start_tuned(true)
    }

    fn start_tuned(durable: bool) -> Postgres {
        let bin = server_binaries();
        let as_postgres = is_root();
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "sitetrail-pg-{}-{}-{stamp:x}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create the cluster's directory");
        if as_postgres {
            std::os::unix::fs::chown(&dir, Some(id_of("-u")), Some(id_of("-g")))
                .expect("give the cluster's directory to the postgres user");
        }
        let data = dir.join("data");
        let mut pg = Postgres {
            dir,
            data,
            bin,
            port: 0,
            as_postgres,
            durable,
            watchdog: Mutex::new(None),
        };
        pg.spawn_watchdog();
        let data = pg.data.to_str().expect("a UTF-8 temp path").to_owned();
        let out = pg
            .server_command("initdb")
            .args([
                "-D",
                &data,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
            ])
            .args(["--no-sync", "--no-instructions"])
            .output()
            .expect("run initdb");
        check("initdb", &out);
        let mut last = String::new();
        for _ in 0..5 {
            pg.port = free_port();
            pg.write_settings();
            match pg.try_start() {
                Ok(()) => return pg,
                Err(log) => last = log,
            }
        }
        panic!("PostgreSQL did not start on a free port in 5 tries; its log:\n{last}");
    }

    fn server_command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    fn client_command(&self, program: &str) -> Command {
        let mut c = Command::new(self.bin.join(program));
        c.args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres"]);
        c.env("PGCONNECT_TIMEOUT", "10");
        c
    }

    /// The watchdog: a shell that waits for its stdin to close (this process ended, or this
    /// value was dropped), then stops the cluster and removes its directory.
    fn spawn_watchdog(&mut self) {
        let mut child = Command::new("sh")
            .args([
                "-c",
                r#"cat >/dev/null
                   if [ -f "$DATA/postmaster.pid" ]; then
                     if [ -n "$AS_POSTGRES" ]; then runuser -u postgres -- "$PG_CTL" -D "$DATA" stop -m immediate -w
                     else "$PG_CTL" -D "$DATA" stop -m immediate -w; fi
                   fi >/dev/null 2>&1
                   rm -rf "$DIR""#,
            ])
            .env("DATA", &self.data)
            .env("DIR", &self.dir)
            .env("PG_CTL", self.bin.join("pg_ctl"))
            .env("AS_POSTGRES", if self.as_postgres { "1" } else { "" })
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the cluster's watchdog (sh)");
        let stdin = child.stdin.take().expect("the watchdog's stdin");
        *self.watchdog.lock().unwrap() = Some((child, stdin));
    }

    fn write_settings(&self) {
        let conf = self.data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).expect("read postgresql.conf");
        if let Some(at) = text.find("\n# sitetrail tests\n") {
            text.truncate(at);
        }
        text.push_str(&format!(
            "\n# sitetrail tests\nport = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             max_connections = 300\nshared_buffers = 128MB\nlog_min_messages = warning\n",
            self.port,
            self.dir.display()
        ));
        if !self.durable {
            text.push_str("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n");
        }
        std::fs::write(&conf, text).expect("write postgresql.conf");
    }

    fn try_start(&self) -> Result<(), String> {
        let log = self.dir.join("postgres.log");
        let out = self
            .server_command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(&log)
            .args(["-w", "-t", "60", "start"])
            .output()
            .expect("run pg_ctl start");
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{}{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(&log).unwrap_or_default()
            ))
        }
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id (the first line of `postmaster.pid`), for benchmarks that measure
    /// its CPU.
    pub fn pid(&self) -> u32 {
        let file = std::fs::read_to_string(self.data.join("postmaster.pid")).expect("postmaster.pid");
        file.lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .expect("a pid")
    }

    /// The URL of database `name`.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates a new, empty database with a unique name (starting with `hint`) and returns its
    /// name.
    pub fn create_database(&self, hint: &str) -> String {
        let hint: String = hint
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(20)
            .collect::<String>()
            .to_lowercase();
        let name = format!(
            "{hint}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let out = self
            .client_command("createdb")
            .arg(&name)
            .output()
            .expect("run createdb");
        check("createdb", &out);
        name
    }

    /// Runs `sql` in database `db` with psql and returns what it printed (unaligned, tuples
    /// only: one row a line, columns separated by `|`).
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = self
            .client_command("psql")
            .args(["-d", db, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .expect("run psql");
        check(&format!("psql {sql:?}"), &out);
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
    }

    /// A plain-text `pg_dump` of database `db`: schema and every row.
    pub fn dump(&self, db: &str) -> Vec<u8> {
        let out = self
            .client_command("pg_dump")
            .args(["-d", db])
            .output()
            .expect("run pg_dump");
        check("pg_dump", &out);
        out.stdout
    }

    /// Loads a plain-text dump (as [`Postgres::dump`] makes) into database `db`, as an operator
    /// restoring a hub from its `pg_dump` would.
    pub fn restore(&self, db: &str, dump: &[u8]) {
        use std::io::Write;
        let mut child = self
            .client_command("psql")
            .args(["-d", db, "-q", "-v", "ON_ERROR_STOP=1"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run psql");
        child.stdin.take().unwrap().write_all(dump).unwrap();
        let out = child.wait_with_output().expect("psql ends");
        check("psql (restore)", &out);
    }

    /// A `pg_dump --data-only` of database `db`: every row of every table, as text (uuids
    /// hyphenated, bytea as `\\x` and hex), without the schema.
    pub fn dump_data(&self, db: &str) -> String {
        let out = self
            .client_command("pg_dump")
            .args(["--data-only", "-d", db])
            .output()
            .expect("run pg_dump");
        check("pg_dump --data-only", &out);
        String::from_utf8(out.stdout).expect("a UTF-8 dump")
    }

    /// Stops the server (fast shutdown: connections are closed), keeping its files.
    pub fn stop(&self) {
        let out = self
            .server_command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-w", "-m", "fast", "stop"])
            .output()
            .expect("run pg_ctl stop");
        check("pg_ctl stop", &out);
    }

    /// Starts a stopped server again, on the same port.
    pub fn start_again(&self) {
        if let Err(log) = self.try_start() {
            panic!("PostgreSQL did not start again:\n{log}");
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.watchdog.lock().map(|mut w| w.take()).unwrap_or(None) {
            drop(stdin);
            let _ = child.wait();
        }
    }
}
