//! The `sitetrail` command-line tool. Its commands and flags are a contract for scripts: extend
//! them, never rename or remove them.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
