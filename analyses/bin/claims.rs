//! The `claims` analysis as a binary: what `normscope reproduce --only claims` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("claims")
}
