//! Wrong files and hostile content, through the real CLI: another program's database given as
//! `--db`, a database from a newer Sitetrail, an export aimed at the database itself, formula
//! titles in a CSV export, the modes of the files Sitetrail creates, and visit times out of range.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::support::{cli, run_ok, TempDb};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn hash(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read file");
    format!("{:x}", Sha256::digest(bytes))
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Runs `sitetrail` with `args`, expects it to fail, returns stderr.
fn run_err(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().expect("run sitetrail");
    assert!(
        !out.status.success(),
        "expected a failure: {cmd:?}\nstdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn another_programs_database_is_refused_byte_for_byte_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["firefox-places.sqlite", "chromium-History"] {
        let copy = dir.path().join(name);
        std::fs::copy(fixture(name), &copy).unwrap();
        let before = hash(&copy);
        let files_before = names_in(dir.path());
        for args in [
            &["status"][..],
            &["visit", "https://a.example/"],
            &["worker", "--until-idle"],
        ] {
            let err = run_err(cli(&copy).args(args));
            assert!(
                err.contains(&copy.display().to_string()) && err.contains("not a Sitetrail database"),
                "{name} {args:?}: {err}"
            );
            assert_eq!(hash(&copy), before, "{name} was changed by {args:?}");
            assert_eq!(
                names_in(dir.path()),
                files_before,
                "{name}: files left behind by {args:?}"
            );
        }
    }
    // Another program's mark is refused by its application_id.
    let marked = dir.path().join("fossil.db");
    let c = rusqlite::Connection::open(&marked).unwrap();
    c.execute_batch("PRAGMA application_id = 252006674; CREATE TABLE t (x);")
        .unwrap();
    drop(c);
    let before = hash(&marked);
    let err = run_err(cli(&marked).arg("status"));
    assert!(err.contains("another program"), "{err}");
    assert_eq!(hash(&marked), before);
    // A file that is not SQLite at all.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "my notes ".repeat(100)).unwrap();
    let err = run_err(cli(&text).arg("status"));
    assert!(
        err.contains("not a SQLite database") && err.contains("notes.txt"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&text).unwrap(), "my notes ".repeat(100));
}

#[test]
fn new_and_empty_files_are_initialised_and_marked() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    for path in [empty, dir.path().join("new.db")] {
        run_ok(cli(&path).args(["visit", "https://a.example/"]));
        let c = rusqlite::Connection::open(&path).unwrap();
        let id: i32 = c.query_row("PRAGMA application_id", [], |r| r.get(0)).unwrap();
        assert_eq!(id, sitetrail::store::APPLICATION_ID, "{}", path.display());
    }
}

#[test]
fn a_sitetrail_database_from_before_the_mark_is_recognised_and_marked() {
    let db = TempDb::new();
    // What an older Sitetrail left: its first three migrations, application_id 0.
    let c = rusqlite::Connection::open(&db.path).unwrap();
    c.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
    c.execute_batch(
        "CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
    )
    .unwrap();
    for &(version, name, sql) in &sitetrail::store::MIGRATIONS[..3] {
        c.execute_batch(sql).unwrap();
        c.execute(
            "INSERT INTO schema_migrations VALUES (?1, ?2, 0)",
            rusqlite::params![version, name],
        )
        .unwrap();
    }
    c.execute_batch(
        "INSERT INTO website (id, domain, created_at, version) VALUES (randomblob(16), 'old.example', 0, 0)",
    )
    .unwrap();
    let id: i32 = c.query_row("PRAGMA application_id", [], |r| r.get(0)).unwrap();
    assert_eq!(id, 0);
    drop(c);
    let out = run_ok(cli(&db.path).args(["websites", "--json"]));
    assert!(out.contains("old.example"), "{out}");
    let c = rusqlite::Connection::open(&db.path).unwrap();
    let id: i32 = c.query_row("PRAGMA application_id", [], |r| r.get(0)).unwrap();
    assert_eq!(
        id,
        sitetrail::store::APPLICATION_ID,
        "the old database got the mark"
    );
}

#[test]
fn a_database_from_a_newer_sitetrail_is_refused_unchanged() {
    let db = TempDb::new();
    run_ok(cli(&db.path).args(["visit", "https://a.example/"]));
    let c = rusqlite::Connection::open(&db.path).unwrap();
    c.execute(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'from_the_future', 0)",
        [],
    )
    .unwrap();
    // Back to a rollback journal so the file on its own is the whole database.
    c.execute_batch("PRAGMA journal_mode = DELETE;").unwrap();
    drop(c);
    let before = hash(&db.path);
    let files_before = names_in(db.dir.path());
    for args in [&["status"][..], &["visit", "https://b.example/"]] {
        let err = run_err(cli(&db.path).args(args));
        assert!(
            err.contains("newer version of Sitetrail") && err.contains("0099_from_the_future"),
            "{args:?}: {err}"
        );
        assert!(err.contains(&db.path.display().to_string()), "{err}");
    }
    assert_eq!(hash(&db.path), before, "nothing was written");
    assert_eq!(
        names_in(db.dir.path()),
        files_before,
        "no -wal or -shm left behind"
    );
}

#[test]
fn export_refuses_to_write_over_the_database_however_it_is_spelled() {
    let db = TempDb::new();
    run_ok(cli(&db.path).args(["visit", "https://a.example/", "--title", "kept"]));
    let sub = db.dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let mut targets = vec![
        db.path.clone(),
        sub.join("../sitetrail.db"),
        db.dir.path().join("sitetrail.db-wal"),
        db.dir.path().join("sitetrail.db-shm"),
        db.dir.path().join("sitetrail.db-journal"),
    ];
    #[cfg(unix)]
    {
        let link = db.dir.path().join("link.csv");
        std::os::unix::fs::symlink(&db.path, &link).unwrap();
        targets.push(link);
        let hard = db.dir.path().join("hard.csv");
        std::fs::hard_link(&db.path, &hard).unwrap();
        targets.push(hard);
    }
    let before = hash(&db.path);
    for target in &targets {
        for what in ["history", "categories"] {
            let err = run_err(cli(&db.path).args(["export", what, "-o"]).arg(target));
            assert!(
                err.contains("cannot export") && err.contains("database"),
                "{target:?}: {err}"
            );
        }
    }
    assert_eq!(hash(&db.path), before, "the database is untouched");
    let out = run_ok(cli(&db.path).args(["websites", "--json"]));
    assert!(out.contains("a.example"), "{out}");
    // No temporary file was left anywhere.
    let leftovers: Vec<String> = names_in(db.dir.path())
        .into_iter()
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn csv_export_neutralises_formula_cells_and_json_keeps_them() {
    let db = TempDb::new();
    // Titles cannot hold a tab or CR (they are cleaned when stored); a source name can.
    let visits = [
        ("=HYPERLINK(\"http://evil.example\",\"x\")", "cli"),
        ("+1+1", "cli"),
        ("-2+3", "cli"),
        ("@SUM(A1)", "cli"),
        ("plain", "\tTabbed"),
        ("plain", "\rReturn"),
        ("plain", "=source"),
    ];
    for (i, (title, source)) in visits.iter().enumerate() {
        run_ok(cli(&db.path).args([
            "visit",
            &format!("https://site{i}.example/"),
            &format!("--title={title}"),
            &format!("--source={source}"),
        ]));
    }
    let csv_path = db.dir.path().join("h.csv");
    run_ok(cli(&db.path).args(["export", "history", "-o"]).arg(&csv_path));
    let raw = std::fs::read_to_string(&csv_path).unwrap();
    let mut reader = csv::Reader::from_path(&csv_path).unwrap();
    let headers = reader.headers().unwrap().clone();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let column = |name: &str| {
        let col = headers.iter().position(|h| h == name).unwrap();
        records.iter().map(|r| r[col].to_owned()).collect::<Vec<String>>()
    };
    let (titles, sources) = (column("title"), column("source"));
    for (title, source) in visits {
        for (value, cells) in [(title, &titles), (source, &sources)] {
            let expected = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
                format!("'{value}")
            } else {
                value.to_owned()
            };
            assert!(cells.contains(&expected), "{expected:?} not in {cells:?}");
            assert!(
                raw.contains(&format!("\"{}\"", expected.replace('"', "\"\""))),
                "not quoted: {expected:?}\n{raw}"
            );
        }
    }
    for record in &records {
        for cell in record {
            assert!(
                !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                "live formula {cell:?}"
            );
        }
    }

    let json_path = db.dir.path().join("h.json");
    run_ok(
        cli(&db.path)
            .args(["export", "history", "--format", "json", "-o"])
            .arg(&json_path),
    );
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let json_titles: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["title"].as_str().unwrap())
        .collect();
    assert!(
        json_titles.contains(&"=HYPERLINK(\"http://evil.example\",\"x\")"),
        "JSON unchanged: {json_titles:?}"
    );

    // The categories export neutralises its text columns too (a domain cannot start with a
    // formula character, so check the cell writer through a category source it can hold).
    let cats = db.dir.path().join("c.csv");
    run_ok(cli(&db.path).args(["export", "categories", "-o"]).arg(&cats));
    let text = std::fs::read_to_string(&cats).unwrap();
    assert!(
        text.starts_with("\"website_id\",\"domain\""),
        "every cell quoted: {text}"
    );
}

#[cfg(unix)]
#[test]
fn the_data_folder_and_database_files_sitetrail_creates_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let db = root.path().join("data/sitetrail/sitetrail.db");
    run_ok(cli(&db).args(["visit", "https://a.example/"]));
    assert_eq!(mode(&root.path().join("data")), 0o700);
    assert_eq!(mode(db.parent().unwrap()), 0o700);
    assert_eq!(mode(&db), 0o600);
    assert_eq!(
        mode(root.path()),
        0o755,
        "a folder the user chose is not chmod-ed"
    );
    // While the database is open, its -wal and -shm exist: private too.
    let store = sitetrail::Store::open(&db).unwrap();
    crate::support::visit(&store, "https://b.example/");
    for side in ["sitetrail.db-wal", "sitetrail.db-shm"] {
        assert_eq!(mode(&db.parent().unwrap().join(side)), 0o600, "{side}");
    }
    drop(store);
    // An existing file the user made keeps its mode.
    let mine = root.path().join("mine.db");
    std::fs::write(&mine, b"").unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o640)).unwrap();
    run_ok(cli(&mine).arg("status"));
    assert_eq!(mode(&mine), 0o640);
    // Exports and the settings file are private.
    let export = root.path().join("h.csv");
    run_ok(cli(&db).args(["export", "history", "-o"]).arg(&export));
    assert_eq!(mode(&export), 0o600);
    let settings = root.path().join("config/sitetrail/settings.json");
    sitetrail::settings::Settings::default().save(&settings).unwrap();
    assert_eq!(mode(&settings), 0o600);
    assert_eq!(mode(settings.parent().unwrap()), 0o700);
    assert_eq!(mode(&root.path().join("config")), 0o700);
}

#[test]
fn visit_times_outside_the_importers_range_are_refused() {
    let db = TempDb::new();
    for at in [
        "1969-12-31T23:59:59Z",
        "1970-01-01T00:00:00Z",
        "1989-12-31T23:59:59Z",
        "2200-01-01T00:00:00Z",
        "9999-01-01T00:00:00Z",
    ] {
        let err = run_err(cli(&db.path).args(["visit", "https://a.example/", "--at", at]));
        assert!(err.contains("--at") && err.contains("1990"), "{at}: {err}");
    }
    let store = db.open();
    assert_eq!(crate::support::count(&store, "visit"), 0, "nothing stored");
    for at in ["1990-01-01T00:00:00Z", "2199-12-31T23:59:59Z"] {
        run_ok(cli(&db.path).args(["visit", "https://a.example/", "--at", at]));
    }
    assert_eq!(crate::support::count(&store, "visit"), 2);
}

/// Runs `cmd` to its end (killed and failed if it runs a minute: a hang), returns its output.
fn run_bounded(cmd: &mut std::process::Command) -> std::process::Output {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run sitetrail");
    let ended = crate::support::wait_for(std::time::Duration::from_secs(60), || {
        child.try_wait().expect("wait").is_some()
    });
    if !ended {
        let _ = child.kill();
        panic!("{cmd:?} hung");
    }
    child.wait_with_output().expect("output")
}

#[cfg(unix)]
#[test]
fn a_database_path_that_is_not_a_regular_file_is_refused_at_once_and_nothing_is_created_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.db");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let folder = dir.path().join("folder.db");
    std::fs::create_dir(&folder).unwrap();
    let dev_side_files = [
        "/dev/null-journal",
        "/dev/null-wal",
        "/dev/zero-journal",
        "/dev/zero-wal",
    ];
    let cases: [(&Path, &str); 4] = [
        (&fifo, "a FIFO"),
        (Path::new("/dev/zero"), "a character device"),
        (Path::new("/dev/null"), "a character device"),
        (&folder, "a folder"),
    ];
    for (path, what) in cases {
        for args in [
            &["status"][..],
            &["history"],
            &["visit", "https://a.example/"],
            &["export", "history", "-o", "/tmp/never-written.csv"],
            &["forget", "range", "--since", "7d", "--until", "today"],
        ] {
            let out = run_bounded(cli(path).args(args));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{path:?} {args:?} succeeded");
            assert!(
                err.contains(what)
                    && err.contains("not a database file")
                    && err.contains(&path.display().to_string()),
                "{path:?} {args:?}: {err}"
            );
        }
    }
    for side in dev_side_files {
        assert!(!Path::new(side).exists(), "{side} was created");
    }
    assert_eq!(
        names_in(dir.path()),
        ["fifo.db", "folder.db"],
        "nothing created beside them"
    );

    // The native host answers its hello with the problem instead of waiting for the FIFO.
    let mut host = crate::capture::host::HostProc::start(&fifo, &[]);
    let hello = host.request(&serde_json::json!({"type": "hello"}));
    assert_eq!(hello["ok"], false, "{hello}");
    assert!(hello["problem"].as_str().unwrap().contains("FIFO"), "{hello}");
    assert!(host.finish().success());
}

/// `cmd` run as a user who cannot write what root made read-only (root writes anything): root's
/// tests run it as `nobody`.
#[cfg(unix)]
fn as_unprivileged(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::process::CommandExt;
    // What this process creates is owned by its effective user.
    let probe = tempfile::tempfile().unwrap();
    if probe.metadata().unwrap().uid() == 0 {
        cmd.uid(65_534).gid(65_534);
    }
    cmd
}

#[cfg(unix)]
#[test]
fn a_read_only_database_is_read_and_every_write_says_it_is_read_only() {
    use std::os::unix::fs::PermissionsExt;
    let db = TempDb::new();
    let store = db.open();
    crate::support::visit(&store, "https://read.example/only?q=backup");
    drop(store);
    // The pool may still be opening a connection it was asked for on its own thread (the visit
    // was served by another): that one closes, and checkpoints, as soon as it is open.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while names_in(db.dir.path()) != ["sitetrail.db"] && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        names_in(db.dir.path()),
        ["sitetrail.db"],
        "closed cleanly, no WAL left"
    );
    // A backup on read-only media: the file and its folder cannot be written.
    std::fs::set_permissions(&db.path, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(db.dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = hash(&db.path);
    let out_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(out_dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let export = out_dir.path().join("h.csv");
    let run = |args: &[&str]| {
        let mut cmd = cli(&db.path);
        cmd.args(args)
            .env("HOME", out_dir.path())
            .env("SITETRAIL_SETTINGS", out_dir.path().join("settings.json"));
        run_bounded(as_unprivileged(&mut cmd))
    };
    for args in [
        &["history", "--json"][..],
        &["history", "--search", "backup"],
        &["status"],
        &["time"],
        &["export", "history", "-o", export.to_str().unwrap()],
    ] {
        let out = run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if args[0] == "history" {
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("read.example"),
                "{args:?}"
            );
        }
    }
    assert!(std::fs::read_to_string(&export)
        .unwrap()
        .contains("read.example/only"));
    for args in [
        &["visit", "https://b.example/"][..],
        &["forget", "website", "read.example"],
        &["categorize", "read.example", "news"],
        &["worker", "--until-idle"],
        &["daemon"],
        &["import", "--auto"],
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains("is read-only"), "{args:?}: {err}");
    }
    assert_eq!(hash(&db.path), before, "the file is unchanged");
    assert_eq!(names_in(db.dir.path()), ["sitetrail.db"], "no side file");
    std::fs::set_permissions(db.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[cfg(unix)]
#[test]
fn export_writes_into_pipes_and_devices_and_through_symlinks_without_replacing_them() {
    let db = TempDb::new();
    run_ok(cli(&db.path).args(["visit", "https://piped.example/page"]));
    let dir = tempfile::tempdir().unwrap();
    let is_link = |p: &Path| std::fs::symlink_metadata(p).unwrap().file_type().is_symlink();
    // A link to this process's standard output, as /dev/stdout is (made here, so that a broken
    // export replaces this link and not the system's).
    let stdout_link = dir.path().join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &stdout_link).unwrap();
    for target in [
        stdout_link.clone(),
        PathBuf::from("/dev/fd/1"),
        PathBuf::from("/dev/stdout"),
    ] {
        let out = run_bounded(cli(&db.path).args(["export", "history", "-o"]).arg(&target));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{target:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.starts_with("\"visit_id\"") && stdout.contains("piped.example/page"),
            "{target:?}: the rows reach the pipe, and only they: {stdout}"
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("exported 1 row(s)"));
    }
    assert!(is_link(&stdout_link), "the link to stdout was replaced");
    assert!(is_link(Path::new("/dev/stdout")));
    // A FIFO: written directly, with a reader at the other end.
    let fifo = dir.path().join("out.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    run_ok(
        cli(&db.path)
            .args(["export", "history", "--format", "json", "-o"])
            .arg(&fifo),
    );
    assert!(reader.join().unwrap().contains("piped.example/page"));
    run_ok(cli(&db.path).args(["export", "history", "-o", "/dev/null"]));
    // A symlink to a file: the file gets the export, the link stays a link.
    let real = dir.path().join("real.csv");
    std::fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.csv");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    run_ok(cli(&db.path).args(["export", "history", "-o"]).arg(&link));
    assert!(is_link(&link));
    assert!(std::fs::read_to_string(&real)
        .unwrap()
        .contains("piped.example/page"));
    // A link to nothing is refused and left as it is.
    let dangling = dir.path().join("dangling.csv");
    std::os::unix::fs::symlink(dir.path().join("missing/x.csv"), &dangling).unwrap();
    let err = run_err(cli(&db.path).args(["export", "history", "-o"]).arg(&dangling));
    assert!(
        err.contains("symbolic link") && err.contains("does not exist"),
        "{err}"
    );
    assert!(is_link(&dangling));
    let names = names_in(dir.path());
    assert_eq!(
        names,
        ["dangling.csv", "link.csv", "out.fifo", "real.csv", "stdout"],
        "no temporary file"
    );
}

#[cfg(unix)]
#[test]
fn a_settings_file_with_a_byte_order_mark_is_read_and_one_that_is_not_a_file_is_refused_by_name() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let with_bom = dir.path().join("settings.json");
    std::fs::write(&with_bom, "\u{feff}{\"batch_size\": 7}\n").unwrap();
    // `classify` reads the settings and fails on a bad file (`status` only skips its estimate).
    let status = |settings: &Path| {
        run_bounded(
            cli(&db.path)
                .arg("--settings")
                .arg(settings)
                .args(["classify", "example.com"])
                .env_remove("SITETRAIL_SETTINGS"),
        )
    };
    let out = status(&with_bom);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let folder = dir.path().join("config");
    std::fs::create_dir(&folder).unwrap();
    let fifo = dir.path().join("settings.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let huge = dir.path().join("huge.json");
    std::fs::File::create(&huge).unwrap().set_len(1 << 30).unwrap();
    for (path, what) in [
        (folder.as_path(), "a folder"),
        (Path::new("/dev/zero"), "a character device"),
        (fifo.as_path(), "a FIFO"),
        (huge.as_path(), "larger than"),
    ] {
        let out = status(path);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{path:?}: {err}");
        assert!(
            err.contains(&path.display().to_string()) && err.contains(what),
            "{path:?}: {err}"
        );
    }
}
