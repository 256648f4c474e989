//! A private D-Bus session bus (its own `dbus-daemon`, no service activation) for the tests that
//! need a desktop service: the OS keyring's and the notification service's.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A `dbus-daemon` of its own; stopped on drop.
pub struct PrivateBus {
    pub dir: tempfile::TempDir,
    /// Its address, for `DBUS_SESSION_BUS_ADDRESS`.
    pub address: String,
    bus: Child,
}

impl PrivateBus {
    pub fn start() -> PrivateBus {
        let dir = tempfile::tempdir().unwrap();
        // Without service activation: only the services a test starts answer.
        let config = dir.path().join("bus.conf");
        std::fs::write(
            &config,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
                dir.path().join("bus").display()
            ),
        )
        .unwrap();
        let mut bus = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            // (As root in a container it warns that it cannot raise its fd limit.)
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon is missing: run scripts/setup");
        let mut address = String::new();
        BufReader::new(bus.stdout.take().unwrap())
            .read_line(&mut address)
            .unwrap();
        let address = address.trim().to_owned();
        assert!(address.starts_with("unix:"), "dbus-daemon printed {address:?}");
        PrivateBus { dir, address, bus }
    }
}

impl Drop for PrivateBus {
    fn drop(&mut self) {
        let _ = self.bus.kill();
        let _ = self.bus.wait();
    }
}
