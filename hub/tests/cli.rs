//! The command line: `--help` explains every flag and its variable, `--version`, and bad
//! arguments are exit 2.

use crate::support::run_hub;

#[test]
fn help_names_every_flag_and_variable_and_never_a_password() {
    let (code, help, _) = run_hub(&["--help"], &[]);
    assert_eq!(code, 0);
    for word in ["serve", "migrate", "Exit codes", "SITETRAIL_HUB_LOG"] {
        assert!(help.contains(word), "{word} missing from --help:\n{help}");
    }
    let secret = [
        ("SITETRAIL_HUB_DATABASE_URL", "postgres://hub:hunter2@db/hub"),
        (
            "SITETRAIL_HUB_DIRECT_DATABASE_URL",
            "postgres://hub:hunter3@db:5432/hub",
        ),
    ];
    let (code, serve, _) = run_hub(&["serve", "--help"], &secret);
    assert_eq!(code, 0);
    for (flag, variable) in [
        ("--database-url", "SITETRAIL_HUB_DATABASE_URL"),
        ("--direct-database-url", "SITETRAIL_HUB_DIRECT_DATABASE_URL"),
        ("--listen", "SITETRAIL_HUB_LISTEN"),
        ("--startup-wait", "SITETRAIL_HUB_STARTUP_WAIT"),
        ("--pool-size", "SITETRAIL_HUB_POOL_SIZE"),
        ("--max-connections", "SITETRAIL_HUB_MAX_CONNECTIONS"),
        ("--max-requests", "SITETRAIL_HUB_MAX_REQUESTS"),
        (
            "--max-requests-per-account",
            "SITETRAIL_HUB_MAX_REQUESTS_PER_ACCOUNT",
        ),
        ("--request-timeout", "SITETRAIL_HUB_REQUEST_TIMEOUT"),
        ("--header-timeout", "SITETRAIL_HUB_HEADER_TIMEOUT"),
        ("--real-ip-header", "SITETRAIL_HUB_REAL_IP_HEADER"),
    ] {
        assert!(
            serve.contains(flag) && serve.contains(variable),
            "{flag} / {variable} missing:\n{serve}"
        );
    }
    assert!(
        !serve.contains("hunter2") && !serve.contains("hunter3"),
        "a database URL's value is shown:\n{serve}"
    );
    let (code, migrate, _) = run_hub(&["migrate", "--help"], &[]);
    assert_eq!(code, 0);
    assert!(migrate.contains("--database-url") && !migrate.contains("--listen"));
}

#[test]
fn version_and_bad_arguments() {
    let (code, version, _) = run_hub(&["--version"], &[]);
    assert_eq!(code, 0);
    assert_eq!(
        version.trim(),
        format!("sitetrail-hub {}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(run_hub(&["serve"], &[]).0, 2, "no database URL");
    assert_eq!(
        run_hub(&["serve", "--database-url", "x", "--pool-size", "0"], &[]).0,
        2
    );
    assert_eq!(
        run_hub(&["serve", "--database-url", "x", "--listen", "nowhere"], &[]).0,
        2
    );
    assert_eq!(run_hub(&["frobnicate"], &[]).0, 2);
}

#[test]
fn the_man_pages_have_examples_exit_codes_environment_and_files() {
    let root = tempfile::tempdir().unwrap();
    let (code, _, err) = run_hub(&["package-files", "--root", root.path().to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
    let dir = root.path().join("usr/share/man/man1");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "sitetrail-hub-accounts-delete.1",
            "sitetrail-hub-accounts-list.1",
            "sitetrail-hub-accounts-show.1",
            "sitetrail-hub-accounts.1",
            "sitetrail-hub-migrate.1",
            "sitetrail-hub-serve.1",
            "sitetrail-hub.1"
        ],
        "one page per command, the hidden one left out"
    );
    let page = std::fs::read_to_string(dir.join("sitetrail-hub.1")).unwrap();
    for section in [".SH EXAMPLES", ".SH EXIT STATUS", ".SH ENVIRONMENT", ".SH FILES"] {
        assert!(page.contains(section), "{section} missing:\n{page}");
    }
    // The exit codes are the ones --help promises.
    let (_, help, _) = run_hub(&["--help"], &[]);
    for code in 0..=5 {
        assert!(
            page.contains(&format!(".TP\n\\fB{code}\\fR")),
            "exit code {code}:\n{page}"
        );
        assert!(help.contains(&format!("{code} ")), "{help}");
    }
    assert!(!help.contains("package-files"), "hidden from --help");
    let serve = std::fs::read_to_string(dir.join("sitetrail-hub-serve.1")).unwrap();
    assert!(serve.contains("SITETRAIL_HUB_DATABASE_URL") && serve.contains("/etc/sitetrail\\-hub/hub.env"));
    // groff reads it without a warning.
    let out = std::process::Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(dir.join("sitetrail-hub.1"))
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_device_lets_an_idle_connection_go_before_the_hub_closes_it() {
    // A device that kept an idle connection past the hub's header timeout could send a request
    // on it as the hub closes it, and fail with a transport error (`src/sync/client.rs`).
    let (code, serve, _) = run_hub(&["serve", "--help"], &[]);
    assert_eq!(code, 0);
    let after_flag = &serve[serve.find("--header-timeout").expect("the flag")..];
    let default: u64 = after_flag
        .split("[default: ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no default for --header-timeout:\n{serve}"));
    assert!(
        sitetrail::sync::client::POOL_IDLE_TIMEOUT < std::time::Duration::from_secs(default),
        "the device keeps idle connections {:?}, the hub closes them after {default} s",
        sitetrail::sync::client::POOL_IDLE_TIMEOUT
    );
}
