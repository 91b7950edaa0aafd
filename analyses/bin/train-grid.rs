//! The `train-grid` analysis as a binary: what `normscope reproduce --only train-grid` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("train-grid")
}
