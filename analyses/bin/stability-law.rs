//! The `stability-law` analysis as a binary: what `normscope reproduce --only stability-law` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("stability-law")
}
