//! The `placement-file` analysis as a binary: what `normscope reproduce --only placement-file` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("placement-file")
}
