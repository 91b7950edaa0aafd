//! `normscope-bench`'s tests, one binary with a module per workload. No test asserts a time:
//! they check what is printed, what is refused, and (with PyTorch) that both sides ran.

mod common;
mod grid;
mod mc;
mod train;
