//! The `convergence` analysis as a binary: what `normscope reproduce --only convergence` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("convergence")
}
