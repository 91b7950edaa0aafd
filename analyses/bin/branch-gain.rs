//! The `branch-gain` analysis as a binary: what `normscope reproduce --only branch-gain` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("branch-gain")
}
