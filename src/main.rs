//! The `toolgate` binary: everything is in [`toolgate::cli`].

/// The system allocator, plus a bump region a hook process switches to
/// (docs/performance.md).
#[global_allocator]
static ALLOCATOR: toolgate::arena::Arena = toolgate::arena::Arena;

fn main() -> std::process::ExitCode {
    toolgate::cli::main()
}
