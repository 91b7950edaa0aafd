//! The `finite-width` analysis as a binary: what `normscope reproduce --only finite-width` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("finite-width")
}
