//! The `expansion` analysis as a binary: what `normscope reproduce --only expansion` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("expansion")
}
