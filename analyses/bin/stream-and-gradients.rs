//! The `stream-and-gradients` analysis as a binary: what `normscope reproduce --only stream-and-gradients` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("stream-and-gradients")
}
