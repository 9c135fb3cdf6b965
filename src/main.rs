//! The `toolgate` binary: everything is in [`toolgate::cli`].

fn main() -> std::process::ExitCode {
    toolgate::cli::main()
}
