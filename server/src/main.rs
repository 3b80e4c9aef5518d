//! The `porch` binary: everything is in the library, so tests run the same code.

fn main() -> std::process::ExitCode {
    porch::cli::main()
}
