//! The `optimizers` analysis as a binary: what `normscope reproduce --only optimizers` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("optimizers")
}
