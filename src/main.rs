//! The `sitetrail` command-line tool. Its commands and flags are a contract for scripts: extend
//! them, never rename or remove them.

// The CLI's output is its standard output (the library never writes there).
#![allow(clippy::print_stdout)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
