//! The `output-change` analysis as a binary: what `normscope reproduce --only output-change` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("output-change")
}
