//! The `sitetrail` command-line tool. Its commands and flags are a contract for scripts: extend
//! them, never rename or remove them.

// All human output goes through `cli::out` (escaped, coloured only on a terminal, quiet when its
// reader goes away); `print_stdout` is denied workspace-wide, and stderr is denied here too.
#![deny(clippy::print_stderr)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
