//! Same seed and config give byte-identical CSVs for any thread count.

use std::process::Command;

fn mc(threads: &str, dir: &std::path::Path, out: &str) -> Vec<u8> {
    let o = Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args([
            "mc",
            "--preset",
            "pre,post",
            "--depth",
            "6",
            "--branch",
            "relu-mlp",
            "--width",
            "64",
            "--tokens",
            "8",
            "--samples",
            "6",
            "--seed",
            "42",
            "--out",
            out,
        ])
        .env("RAYON_NUM_THREADS", threads)
        .current_dir(dir)
        .output()
        .expect("binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read(dir.join(out)).unwrap()
}

#[test]
fn csv_is_byte_identical_across_thread_counts() {
    let dir = tempfile::tempdir().unwrap();
    let one = mc("1", dir.path(), "one.csv");
    let two = mc("2", dir.path(), "two.csv");
    let three = mc("3", dir.path(), "three.csv");
    assert_eq!(one, two);
    assert_eq!(one, three);
    let text = String::from_utf8(one).unwrap();
    assert!(
        text.starts_with("preset,engine,depth,layer,source,metric,value,stderr,ci_low,ci_high,n\n")
    );
    assert!(text.contains(",mc,6,"));
}

#[test]
fn a_different_seed_gives_different_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let a = mc("2", dir.path(), "a.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args([
            "mc",
            "--preset",
            "pre,post",
            "--depth",
            "6",
            "--branch",
            "relu-mlp",
            "--width",
            "64",
            "--tokens",
            "8",
            "--samples",
            "6",
            "--seed",
            "43",
            "--out",
            "b.csv",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_ne!(a, std::fs::read(dir.path().join("b.csv")).unwrap());
}
