//! The `xccd` binary: a thin command-line layer over the `xccd` library.
mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
