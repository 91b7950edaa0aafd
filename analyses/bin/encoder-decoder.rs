//! The `encoder-decoder` analysis as a binary: what `normscope reproduce --only encoder-decoder` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("encoder-decoder")
}
