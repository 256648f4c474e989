//! The CLI's rough edges a newcomer hit (issue 28), each held by a test: no raw log line in `sync
//! setup`'s answer, `forget range` saying only what is true, an unknown `--device` refused with
//! the devices there are, `--until` documented as the code does it, category completion that never
//! offers file names, `--help` listing what people use first, and man pages with examples, exit
//! codes, environment and files.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use sitetrail::{NewVisit, Timestamp};

use crate::support::sync::TestHub;
use crate::support::{cli, run_ok, TempDb};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("run sitetrail")
}

#[test]
fn sync_setup_says_a_refused_keyring_as_a_sentence_not_a_log_line() {
    let hub = TestHub::start();
    let db = TempDb::new();
    let settings = db.dir.path().join("config").join("settings.json");
    // The keyring is tried (on) but there is no bus at that address: it refuses the key.
    let no_bus = format!("unix:path={}", db.dir.path().join("no-bus").display());
    let out = run(cli(&db.path)
        .env("SITETRAIL_SYNC_KEYRING", "on")
        .env("DBUS_SESSION_BUS_ADDRESS", &no_bus)
        .arg("--settings")
        .arg(&settings)
        .args(["sync", "setup", "--hub", &hub.url, "--device-name", "laptop"]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Your recovery key"), "{stdout}");
    for said in [&stdout, &stderr] {
        assert!(
            !said.contains("WARN") && !said.contains("sitetrail::"),
            "a raw log line: {said}"
        );
    }
    assert!(
        stderr.starts_with("The OS keyring did not take the sync key (")
            && stderr.contains("so it is kept in a file readable by you only"),
        "{stderr}"
    );
    let keys = std::fs::read_dir(settings.parent().unwrap().join("sync"))
        .unwrap()
        .count();
    assert_eq!(keys, 1, "the key went to its file");
}

/// Leaves `pages` free pages of about 1 KiB in the database file: what earlier deletions leave.
fn leave_free_pages(db: &Path, pages: u32) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE junk (x BLOB);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {pages})
         INSERT INTO junk SELECT randomblob(900) FROM n;
         DROP TABLE junk;"
    ))
    .unwrap();
}

#[test]
fn forgetting_an_empty_range_says_nothing_was_there_and_why_the_file_shrank() {
    let db = TempDb::new();
    crate::support::visit(&db.open(), "https://kept.test/");
    leave_free_pages(&db.path, 1_000);
    let said = run_ok(cli(&db.path).args([
        "forget",
        "range",
        "--since",
        "2020-01-01T00:00:00Z",
        "--until",
        "2020-01-02T00:00:00Z",
        "--yes",
    ]));
    assert!(!said.contains("forgot 0 visit"), "{said}");
    assert!(said.contains("no visits were stored in that time"), "{said}");
    assert!(
        said.contains("the database file shrank by") && said.contains("given back now"),
        "the space freed before is said as such: {said}"
    );
    // A range with a visit in it still says what it forgot.
    let said = run_ok(cli(&db.path).args([
        "forget",
        "range",
        "--since",
        "today",
        "--until",
        "2099-01-01",
        "--yes",
    ]));
    assert!(said.starts_with("forgot 1 visit(s)"), "{said}");
}

#[test]
fn an_unknown_device_is_refused_with_the_devices_there_are() {
    let db = TempDb::new();
    crate::support::visit(&db.open(), "https://a.test/");
    // Not synced: no device has a name.
    let out = run(cli(&db.path).args(["history", "--device", "phone"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(err.contains("\"phone\"") && err.contains("not synced"), "{err}");
    // Synced with two devices.
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    for (i, name) in ["laptop", "desktop"].iter().enumerate() {
        conn.execute(
            "INSERT INTO sync_device (device_id, name, hlc) VALUES (?1, ?2, 1)",
            rusqlite::params![vec![i as u8; 16], name],
        )
        .unwrap();
    }
    let out = run(cli(&db.path).args(["history", "--device", "phone"]));
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("the devices are \"desktop\", \"laptop\""), "{err}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    // A device that is there, with nothing to show, is no error.
    let out = run(cli(&db.path).args(["history", "--device", "laptop"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn until_is_inclusive_for_history_and_exclusive_for_time_as_help_and_docs_say() {
    let db = TempDb::new();
    let at = Timestamp::parse_rfc3339("2026-11-29T10:00:00Z").unwrap();
    db.open()
        .record_visit(&NewVisit {
            url: "https://edge.test/",
            title: None,
            visited_at: at,
            source: "test",
            source_visit_id: None,
        })
        .unwrap();
    let until = "2026-11-29T10:00:00Z";
    let history: serde_json::Value = serde_json::from_str(&run_ok(
        cli(&db.path).args(["history", "--json", "--until", until]),
    ))
    .unwrap();
    assert_eq!(history.as_array().unwrap().len(), 1, "history: at or before");
    let time: serde_json::Value =
        serde_json::from_str(&run_ok(cli(&db.path).args(["time", "--json", "--until", until]))).unwrap();
    assert_eq!(time.as_array().unwrap().len(), 0, "time: before");
    let help = run_ok(cli(&db.path).args(["history", "--help"]));
    assert!(help.contains("at or before this time: inclusive"), "{help}");
    let help = run_ok(cli(&db.path).args(["time", "--help"]));
    assert!(help.contains("before this time: exclusive"), "{help}");
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md")).unwrap();
    let docs = docs.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        docs.contains("`--until` is inclusive for `history` and `forget range`")
            && docs.contains("exclusive for `time`"),
        "docs/cli.md says which --until is which"
    );
}

/// Writes the package files (man pages, completions) under a temp root.
fn package_files() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let links = root.path().join("launchers");
    run_ok(
        Command::new(env!("CARGO_BIN_EXE_sitetrail"))
            .arg("package-files")
            .arg("--root")
            .arg(root.path())
            .arg("--launcher-dir")
            .arg(&links),
    );
    root
}

/// What bash completes after `words` (the last one being completed), run in `dir`.
fn bash_completes(script: &Path, dir: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{}'; COMP_POINT=${{#COMP_LINE}}; \
         _sitetrail sitetrail '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1,
        words.join(" "),
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &program])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A positional argument is offered beside the options: the values are what matters here.
    text(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('-'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn completing_a_category_offers_the_category_ids_never_file_names() {
    let root = package_files();
    let script = root
        .path()
        .join("usr/share/bash-completion/completions/sitetrail");
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "").unwrap();
    let ids: Vec<String> = sitetrail::Category::ALL
        .iter()
        .map(|c| c.id().to_owned())
        .collect();
    for words in [
        vec!["sitetrail", "history", "--category", ""],
        vec!["sitetrail", "websites", "--category", ""],
        vec!["sitetrail", "categorize", "example.com", ""],
    ] {
        let offered = bash_completes(&script, cwd.path(), &words);
        assert!(
            !offered.iter().any(|o| o.contains("notes")),
            "{words:?}: {offered:?}"
        );
        assert_eq!(offered, ids, "{words:?}");
    }
    let offered = bash_completes(
        &script,
        cwd.path(),
        &["sitetrail", "history", "--category", "dev"],
    );
    assert_eq!(offered, ["dev_tech"]);
    // A name is still accepted, though only ids are offered; --help does not list them.
    let db = TempDb::new();
    run_ok(cli(&db.path).args(["history", "--category", "Development & technology"]));
    let help = run_ok(cli(&db.path).args(["history", "--help"]));
    assert!(!help.contains("possible values"), "{help}");
}

#[test]
fn help_lists_what_people_use_before_the_plumbing_and_keeps_every_command() {
    let db = TempDb::new();
    let help = run_ok(cli(&db.path).arg("--help"));
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("Options:")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("  ")?.split_whitespace().next())
        .collect();
    let mut sorted = commands.clone();
    sorted.sort_unstable();
    let mut every = vec![
        "visit",
        "worker",
        "status",
        "failed",
        "retry",
        "websites",
        "categorize",
        "reclassify",
        "export",
        "categories",
        "classify",
        "resume",
        "import",
        "daemon",
        "review",
        "native-host",
        "browser-link",
        "time",
        "history",
        "forget",
        "blocked",
        "sync",
        "exclusions",
        "limits",
        "report",
        "focus",
        "help",
    ];
    every.sort_unstable();
    assert_eq!(sorted, every, "no command lost or added:\n{help}");
    let at = |c: &str| commands.iter().position(|x| *x == c).unwrap();
    assert_eq!(&commands[..4], ["history", "time", "forget", "blocked"], "{help}");
    for used in ["history", "time", "forget", "sync", "import"] {
        for plumbing in ["visit", "worker", "status", "failed", "retry", "native-host"] {
            assert!(at(used) < at(plumbing), "{used} before {plumbing}:\n{help}");
        }
    }
}

#[test]
fn man_pages_have_examples_exit_codes_environment_and_files() {
    let root = package_files();
    let dir = root.path().join("usr/share/man/man1");
    for page in [
        "sitetrail.1",
        "sitetrail-history.1",
        "sitetrail-time.1",
        "sitetrail-forget-range.1",
    ] {
        let roff = std::fs::read_to_string(dir.join(page)).unwrap();
        for section in [".SH EXIT STATUS", ".SH ENVIRONMENT", ".SH FILES", ".SH OPTIONS"] {
            assert!(roff.contains(section), "{page}: {section} missing");
        }
        // groff reads it without a warning.
        let out = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(dir.join(page))
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{page}: {}",
            text(&out.stderr)
        );
    }
    for page in [
        "sitetrail.1",
        "sitetrail-history.1",
        "sitetrail-time.1",
        "sitetrail-forget.1",
        "sitetrail-sync.1",
    ] {
        let roff = std::fs::read_to_string(dir.join(page)).unwrap();
        assert!(roff.contains(".SH EXAMPLES"), "{page}: no examples");
    }
    let main = std::fs::read_to_string(dir.join("sitetrail.1")).unwrap();
    // Every exit code of docs/cli.md's table, with its kinds.
    for (code, kind) in [
        (2, "invalid_input"),
        (3, "not_found"),
        (5, "busy"),
        (7, "needs_user"),
        (8, "unavailable"),
    ] {
        assert!(main.contains(&format!("\\fB{code} ({kind}")), "exit {code}");
    }
    // Every SITETRAIL_ variable the commands read is in ENVIRONMENT (the test-only ones, which
    // released builds ignore, aside: docs/development.md has them).
    let environment = &main[main.find(".SH ENVIRONMENT").unwrap()..main.find(".SH FILES").unwrap()];
    for var in sitetrail_variables_in(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))) {
        if [
            "SITETRAIL_NATIVE_HOST_ACK_DELAY_MS",
            "SITETRAIL_SYSTEM_ROOT",
            "SITETRAIL_NOW",
        ]
        .contains(&var.as_str())
        {
            continue;
        }
        assert!(environment.contains(&var), "{var} missing from ENVIRONMENT");
    }
    assert!(!std::fs::read_dir(&dir).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains("package-files")));
}

/// Every `"SITETRAIL_..."` string literal under `dir`.
fn sitetrail_variables_in(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(sitetrail_variables_in(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let code = std::fs::read_to_string(&path).unwrap();
            for piece in code.split("\"SITETRAIL_").skip(1) {
                let name: String = piece
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                    .collect();
                if piece[name.len()..].starts_with('"') {
                    found.push(format!("SITETRAIL_{name}"));
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}
