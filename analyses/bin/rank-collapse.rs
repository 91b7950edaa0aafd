//! The `rank-collapse` analysis as a binary: what `normscope reproduce --only rank-collapse` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("rank-collapse")
}
