//! `sitetrail package-files --root DIR` (hidden): the files a system package installs beside
//! the binary, generated from the real command-line definition and the real link code, so the
//! packages never carry a hand-written copy that drifts: the man pages (`clap_mangen`), the
//! shell completions (`clap_complete`: bash, zsh, fish) and every browser's system-wide
//! native-messaging link (`sitetrail::capture::system_link`). `scripts/package` calls it.
//!
//! The command is added to the parser only (see `cli::main`), never to `Cli`, so it appears in
//! no man page, completion or `--help`.

use std::path::{Path, PathBuf};

use clap::{ArgMatches, Command};
use clap_complete::Shell;

use sitetrail::{Error, Result};

use super::out;

/// The subcommand's name.
pub(crate) const NAME: &str = "package-files";

/// The hidden subcommand's definition.
pub(crate) fn command() -> Command {
    Command::new(NAME)
        .hide(true)
        .about("Writes the man pages, shell completions and system-wide browser links under a package's staging root")
        .arg(
            clap::Arg::new("root")
                .long("root")
                .value_name("DIR")
                .required(true)
                .value_parser(clap::value_parser!(PathBuf))
                .help("The staging root, written to as if it were /"),
        )
        .arg(
            clap::Arg::new("exe")
                .long("exe")
                .value_name("PATH")
                .default_value("/usr/bin/sitetrail")
                .value_parser(clap::value_parser!(PathBuf))
                .help("Where the package installs the sitetrail binary"),
        )
        .arg(
            clap::Arg::new("launcher-dir")
                .long("launcher-dir")
                .value_name("DIR")
                .default_value("/usr/lib/sitetrail/native-host")
                .value_parser(clap::value_parser!(PathBuf))
                .help("Where the package installs the native-messaging launchers"),
        )
}

/// Where each shell finds completions installed by a package (Debian's vendor folders), and the
/// file name's prefix and suffix around the command's name.
const COMPLETIONS: [(Shell, &str, &str, &str); 3] = [
    (Shell::Bash, "usr/share/bash-completion/completions", "", ""),
    (Shell::Zsh, "usr/share/zsh/vendor-completions", "_", ""),
    (Shell::Fish, "usr/share/fish/vendor_completions.d", "", ".fish"),
];

fn path_arg<'a>(m: &'a ArgMatches, id: &str) -> Result<&'a Path> {
    m.get_one::<PathBuf>(id)
        .map(PathBuf::as_path)
        .ok_or_else(|| Error::InvalidInput(format!("--{id} is missing")))
}

/// `cmd` and its subcommands without clap's `help` subcommand: `--help` says the same, and a man
/// page per `help` path (`sitetrail-help-forget-visit`) would only repeat the real ones.
fn without_help_subcommands(cmd: Command) -> Command {
    let cmd = cmd.disable_help_subcommand(true);
    let names: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_owned()).collect();
    names.iter().fold(cmd, |cmd, name| {
        cmd.mut_subcommand(name, without_help_subcommands)
    })
}

/// Runs `sitetrail package-files` with `cli`, the CLI's own definition (without this command).
pub(crate) fn run_package_files(cli: Command, m: &ArgMatches) -> Result<()> {
    let root = path_arg(m, "root")?;
    let (exe, launcher_dir) = (path_arg(m, "exe")?, path_arg(m, "launcher-dir")?);
    let name = exe
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::InvalidInput(format!("--exe {} names no program", exe.display())))?
        .to_owned();
    let mut cli = without_help_subcommands(cli);
    cli.set_bin_name(&name);
    cli.build();

    let man = root.join("usr/share/man/man1");
    std::fs::create_dir_all(&man)?;
    // One page for the command and one per subcommand (`man sitetrail-history`), uncompressed:
    // the packaging script compresses them as Debian wants.
    super::manpage::write_pages(&cli, &man)?;

    for (shell, dir, prefix, suffix) in COMPLETIONS {
        let dir = root.join(dir);
        std::fs::create_dir_all(&dir)?;
        let mut file = std::fs::File::create(dir.join(format!("{prefix}{name}{suffix}")))?;
        clap_complete::generate(shell, &mut cli, &name, &mut file);
    }

    let links = sitetrail::capture::system_link::write_system_links(root, exe, launcher_dir)?;
    out::line(&format!(
        "wrote the man pages, {} shell completions and {} browser link files under {}",
        COMPLETIONS.len(),
        links.len(),
        root.display()
    ))
}
