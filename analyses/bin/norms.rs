//! The `norms` analysis as a binary: what `normscope reproduce --only norms` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("norms")
}
