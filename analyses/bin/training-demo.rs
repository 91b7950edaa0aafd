//! The `training-demo` analysis as a binary: what `normscope reproduce --only training-demo` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("training-demo")
}
