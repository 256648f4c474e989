//! The `sitetrail` command-line tool. Its commands and flags are a contract for scripts: extend
//! them, never rename or remove them.

mod cli;
mod cli_import;
mod cli_review;
mod cli_settings;

fn main() -> std::process::ExitCode {
    cli::main()
}
