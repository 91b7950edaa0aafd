//! The `mc-grid` analysis as a binary: what `normscope reproduce --only mc-grid` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("mc-grid")
}
