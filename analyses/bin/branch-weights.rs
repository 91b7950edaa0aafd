//! The `branch-weights` analysis as a binary: what `normscope reproduce --only branch-weights` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("branch-weights")
}
