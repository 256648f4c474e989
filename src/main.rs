//! The `sitetrail` command-line tool. Its commands and flags are a contract for scripts: extend
//! them, never rename or remove them.

mod cli;
mod cli_capture;
mod cli_forget;
mod cli_history;
mod cli_import;
mod cli_review;
mod cli_settings;
mod cli_time;

fn main() -> std::process::ExitCode {
    cli::main()
}
