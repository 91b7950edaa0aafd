//! The `warmup` analysis as a binary: what `normscope reproduce --only warmup` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("warmup")
}
