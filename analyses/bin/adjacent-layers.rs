//! The `adjacent-layers` analysis as a binary: what `normscope reproduce --only adjacent-layers` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("adjacent-layers")
}
