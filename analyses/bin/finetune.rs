//! The `finetune` analysis as a binary: what `normscope reproduce --only finetune` runs (`--help`).

fn main() -> std::process::ExitCode {
    normscope_analyses::binary::main("finetune")
}
