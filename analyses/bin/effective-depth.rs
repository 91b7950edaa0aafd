//! The `effective-depth` analysis as a binary: what `normscope reproduce --only effective-depth` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("effective-depth")
}
