//! The `deepnorm-alpha` analysis as a binary: what `normscope reproduce --only deepnorm-alpha` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("deepnorm-alpha")
}
