//! Same seed and config give byte-identical CSVs for any thread count.

use std::process::Command;

/// `normscope mc` on a small stack with `seed` and `RAYON_NUM_THREADS = threads`.
fn mc(threads: &str, seed: &str, dir: &std::path::Path, out: &str) -> Vec<u8> {
    mc_with(threads, seed, dir, out, &[])
}

/// [`mc`] with extra flags.
fn mc_with(threads: &str, seed: &str, dir: &std::path::Path, out: &str, extra: &[&str]) -> Vec<u8> {
    let o = Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args([
            "mc", "--preset", "pre,post", "--depth", "6", "--branch", "relu-mlp",
        ])
        .args(["--width", "64", "--tokens", "8", "--samples", "6"])
        .args(["--seed", seed, "--out", out])
        .args(extra)
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
    let one = mc("1", "42", dir.path(), "one.csv");
    assert_eq!(one, mc("2", "42", dir.path(), "two.csv"));
    assert_eq!(one, mc("3", "42", dir.path(), "three.csv"));
    let text = String::from_utf8(one).unwrap();
    let header = format!("{}\n", normscope::output::table::COLUMNS.join(","));
    assert!(text.starts_with(&header), "{text}");
    // preset,label,engine,branch,init,g,norm,width,tokens,samples,seed,hidden_ratio,heads,
    // alpha,beta,lambda,final_norm,q0,c0,eps,path_max,depth,...
    assert!(text.contains("pre,Pre-LN,mc,relu-mlp,xavier,"), "{text}");
    assert!(
        text.contains(",layer,64,8,6,42,4.0,4,,,,,1.0,0.0,0.00001,256,6,"),
        "{text}"
    );
}

#[test]
fn parquet_is_byte_identical_across_thread_counts() {
    // The same command line in two folders: a Parquet file carries its command line in its
    // metadata (docs/data.md, "Parquet"), so the output's name must be the same too.
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let one = mc("1", "42", a.path(), "t.parquet");
    assert_eq!(one, mc("3", "42", b.path(), "t.parquet"));
    assert!(one.starts_with(b"PAR1") && one.ends_with(b"PAR1"));
    let text = String::from_utf8_lossy(&one);
    assert!(text.contains("normscope.provenance") && text.contains("--seed 42"));
}

#[test]
fn a_different_seed_gives_different_numbers() {
    let dir = tempfile::tempdir().unwrap();
    assert_ne!(
        mc("2", "42", dir.path(), "a.csv"),
        mc("2", "43", dir.path(), "b.csv")
    );
}

#[test]
fn f32_and_streamed_csvs_are_byte_identical_across_thread_counts() {
    let dir = tempfile::tempdir().unwrap();
    let f32 = ["--precision", "f32"];
    let one = mc_with("1", "42", dir.path(), "one.csv", &f32);
    assert_eq!(one, mc_with("3", "42", dir.path(), "three.csv", &f32));
    let text = String::from_utf8(one.clone()).unwrap();
    assert!(text.contains("pre,Pre-LN,mc-f32,relu-mlp,"), "{text}");
    // Streaming changes how much of each network is kept, never a number.
    let streamed = ["--precision", "f32", "--memory", "streamed"];
    assert_eq!(
        one,
        mc_with("2", "42", dir.path(), "streamed.csv", &streamed)
    );
    let held = mc_with("2", "42", dir.path(), "held.csv", &["--memory", "held"]);
    let f64_streamed = mc_with("1", "42", dir.path(), "s64.csv", &["--memory", "streamed"]);
    assert_eq!(held, f64_streamed);
    assert_ne!(
        held, one,
        "f32 and f64 runs differ in their engine column and digits"
    );
}
