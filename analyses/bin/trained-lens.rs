//! The `trained-lens` analysis as a binary: what `normscope reproduce --only trained-lens` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("trained-lens")
}
