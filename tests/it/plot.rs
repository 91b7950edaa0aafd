//! `normscope plot`: the help's examples draw the committed tables in each format; Monte Carlo
//! rows (with intervals) become points with bars and closed-form rows lines; the same request
//! gives the same bytes; bad requests are refused with exit 2 and one line naming the field,
//! writing nothing.

use normscope::analyses::commands::plot::{Request, figure};
use normscope::figure::Mark;
use std::path::Path;
use std::process::{Command, Output};

fn normscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("binary runs")
}

fn data(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

#[test]
fn every_plot_help_example_draws_its_format() {
    let dir = tempfile::tempdir().unwrap();
    let help = String::from_utf8(normscope(&["plot", "--help"]).stdout).unwrap();
    let examples: Vec<&str> = help
        .lines()
        .filter_map(|l| l.strip_prefix("  normscope "))
        .collect();
    assert_eq!(examples.len(), 3, "{help}");
    for ex in examples {
        // Each example writes to /tmp/NAME: here into the test's own folder.
        let mut args: Vec<String> = ex.split_whitespace().map(String::from).collect();
        let i = args.iter().position(|a| a == "--out").unwrap() + 1;
        let out = dir.path().join(Path::new(&args[i]).file_name().unwrap());
        args[i] = out.display().to_string();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = normscope(&args);
        assert!(
            o.status.success(),
            "{ex}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let bytes = std::fs::read(&out).unwrap();
        let magic: &[u8] = match out.extension().unwrap().to_str().unwrap() {
            "pdf" => b"%PDF",
            "png" => b"\x89PNG",
            _ => b"<svg",
        };
        assert!(bytes.starts_with(magic), "{ex}");
        // The same request, the same bytes.
        let again = dir.path().join("again");
        std::fs::create_dir_all(&again).unwrap();
        let mut args2: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        args2[i] = again.join(out.file_name().unwrap()).display().to_string();
        let args2: Vec<&str> = args2.iter().map(String::as_str).collect();
        assert!(normscope(&args2).status.success());
        assert_eq!(std::fs::read(args2[i]).unwrap(), bytes, "{ex}");
    }
}

#[test]
fn intervals_become_points_and_exact_values_lines() {
    let mc = Request {
        by: Some("preset".into()),
        ..Request::new(
            data("data/effective-depth/mc.csv"),
            "depth",
            "value",
            "x.pdf",
        )
    }
    .with_filters(&["metric=eff_depth"])
    .unwrap();
    let (fig, notes) = figure(&mc).unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    let plot = &fig.plots[0];
    assert_eq!(
        plot.y_label, "Effective depth",
        "metric titles label a single metric"
    );
    assert_eq!(plot.series.len(), 3);
    for s in &plot.series {
        match &s.mark {
            Mark::Points { ci, .. } => {
                assert_eq!(ci.len(), s.points.len());
                assert!(
                    ci.iter()
                        .zip(&s.points)
                        .all(|(c, p)| c.0 <= p.1 && p.1 <= c.1)
                );
            }
            other => panic!("Monte Carlo rows drawn as {other:?}"),
        }
        assert!(s.points.windows(2).all(|w| w[0].0 < w[1].0), "x sorted");
    }
    // Legends are the presets' display names.
    assert!(plot.series.iter().any(|s| s.label == "Post-LN"));
    let theory = Request {
        by: Some("preset".into()),
        facet: Some("metric".into()),
        ..Request::new(
            data("data/stream-and-gradients/theory.csv"),
            "layer",
            "value",
            "x.pdf",
        )
    }
    .with_filters(&["depth=256"])
    .unwrap();
    let (fig, _) = figure(&theory).unwrap();
    assert_eq!(fig.plots.len(), 3, "one panel per metric");
    assert!(
        fig.plots
            .iter()
            .flat_map(|p| &p.series)
            .all(|s| matches!(s.mark, Mark::Line))
    );
}

#[test]
fn bad_plot_requests_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.pdf");
    let o_s = out.display().to_string();
    let table = "data/effective-depth/theory.csv";
    let cases: [(&[&str], &str); 6] = [
        (
            &["--x", "depth", "--y", "value", "--out", "f.jpg"],
            "invalid --out",
        ),
        (
            &[
                "--x", "preset", "--y", "value", "--by", "preset", "--out", &o_s,
            ],
            "invalid --x",
        ),
        (
            &["--x", "depth", "--y", "value", "--out", &o_s],
            "invalid --by",
        ),
        (
            &[
                "--x",
                "layer",
                "--y",
                "value",
                "--by",
                "preset",
                "--log-x",
                "--where",
                "depth=256",
                "--where",
                "metric=grad_sq",
                "--table",
                "data/stream-and-gradients/theory.csv",
                "--out",
                &o_s,
            ],
            "invalid --log-x",
        ),
        (
            &["--x", "depth", "--y", "valeu", "--out", &o_s],
            "did you mean 'value'",
        ),
        (
            &[
                "--x",
                "depth",
                "--y",
                "value",
                "--where",
                "preset=none",
                "--out",
                &o_s,
            ],
            "invalid --where",
        ),
    ];
    for (args, field) in cases {
        // A case may name its own table (`--table`, taken out here).
        let (table, args): (&str, Vec<&str>) = match args.iter().position(|a| *a == "--table") {
            Some(i) => (
                args[i + 1],
                args.iter()
                    .enumerate()
                    .filter(|(k, _)| *k != i && *k != i + 1)
                    .map(|(_, a)| *a)
                    .collect(),
            ),
            None => (table, args.to_vec()),
        };
        let mut a = vec!["plot", table];
        a.extend(args);
        let o = normscope(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {err}");
        assert!(
            err.contains(field) && err.lines().count() == 1,
            "{a:?}: {err}"
        );
        assert!(!out.exists(), "{a:?} wrote a file");
    }
}

#[test]
fn panels_keep_one_colour_per_series_and_out_is_checked_first() {
    let req = Request {
        by: Some("preset".into()),
        facet: Some("metric".into()),
        ..Request::new(
            data("data/stream-and-gradients/theory.csv"),
            "layer",
            "value",
            "x.pdf",
        )
    }
    .with_filters(&["depth=256"])
    .unwrap();
    let (fig, _) = figure(&req).unwrap();
    let mut colour = std::collections::BTreeMap::new();
    for s in fig.plots.iter().flat_map(|p| &p.series) {
        let c = *colour.entry(s.label.clone()).or_insert(s.color);
        assert_eq!(c, s.color, "{} changes colour between panels", s.label);
    }
    assert!(
        fig.plots
            .iter()
            .all(|p| !p.fold && p.merged().series.iter().all(|s| !s.label.contains(" = ")))
    );
    // A folder as --out is refused before anything is read or drawn.
    let dir = tempfile::tempdir().unwrap();
    let o = normscope(&[
        "plot",
        "data/effective-depth/theory.csv",
        "--x",
        "depth",
        "--y",
        "value",
        "--by",
        "preset",
        "--out",
        &dir.path().display().to_string(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("invalid --out"), "{err}");
}

/// Address-space limit of the hostile runs, in KiB (`ulimit -v`): 16 GiB, enough for the binary
/// and its threads, far below the 44.5 GB a figure of 20,000 panels once asked for.
const ULIMIT_KB: u64 = 16 << 20;

/// Seconds after which a hostile run is killed (`timeout`, exit status 124): a refusal or a
/// small figure takes well under one; a run that hangs never ends.
const WATCHDOG_S: &str = "60";

/// Runs `normscope plot TABLE args` in `dir` (TABLE written there first, from `table`), under
/// [`ULIMIT_KB`] and killed after [`WATCHDOG_S`]; fails if it had to be killed.
fn plot_in(dir: &Path, name: &str, table: &[u8], args: &[&str]) -> Output {
    plot_under(ULIMIT_KB, dir, name, table, args)
}

/// [`plot_in`] under an address-space limit of `limit_kb` KiB.
fn plot_under(limit_kb: u64, dir: &Path, name: &str, table: &[u8], args: &[&str]) -> Output {
    std::fs::write(dir.join(name), table).unwrap();
    let script = format!("ulimit -v {limit_kb} && exec timeout -k 5 {WATCHDOG_S} \"$@\"");
    let o = Command::new("sh")
        .args([
            "-c",
            &script,
            "sh",
            env!("CARGO_BIN_EXE_normscope"),
            "plot",
            name,
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("sh runs");
    assert_ne!(
        o.status.code(),
        Some(124),
        "{args:?} still ran after {WATCHDOG_S} s"
    );
    o
}

/// Asserts a refusal of `normscope plot` in `dir`: exit status 2, one line on stderr holding
/// every one of `names`, nothing on stdout and no `f.svg` (the `--out` of every case).
#[track_caller]
fn assert_refused(o: &Output, dir: &Path, names: &[&str]) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    for n in names {
        assert!(err.contains(n), "no {n:?} in {err}");
    }
    assert!(o.stdout.is_empty());
    assert!(!dir.join("f.svg").exists(), "{err}: wrote the figure");
    err
}

const OUT: [&str; 2] = ["--out", "f.svg"];

#[test]
fn twenty_thousand_facets_are_refused_before_drawing() {
    use normscope::analyses::commands::plot::bounds::MAX_PANELS;
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("layer,value,depth\n");
    for d in 0..20_000 {
        csv += &format!("1,{d},{d}\n");
    }
    let args = [
        "--x", "layer", "--y", "value", "--facet", "depth", OUT[0], OUT[1],
    ];
    let o = plot_in(dir.path(), "t.csv", csv.as_bytes(), &args);
    let most = format!("at most {MAX_PANELS} values");
    assert_refused(
        &o,
        dir.path(),
        &["--facet", "t.csv", "20000", most.as_str()],
    );
    // The same table with the points over the limit of one panel (no --facet).
    let args = [
        "--x", "depth", "--y", "value", "--where", "layer=1", OUT[0], OUT[1],
    ];
    let big: String = std::iter::once("layer,value,depth\n".to_string())
        .chain((0..200_001).map(|d| format!("1,{d},{d}\n")))
        .collect();
    let o = plot_in(dir.path(), "t.csv", big.as_bytes(), &args);
    assert_refused(
        &o,
        dir.path(),
        &["--where", "t.csv", "200001", "200000 points"],
    );
}

#[test]
fn a_table_of_too_many_cells_is_refused_before_it_is_parsed() {
    use normscope::analyses::commands::plot::bounds::MAX_TABLE_CELLS;
    let dir = tempfile::tempdir().unwrap();
    // Two cells a line: one line more than the cap allows.
    let lines = MAX_TABLE_CELLS as usize / 2 + 1;
    let csv = "1,2\n".repeat(lines);
    let o = plot_in(
        dir.path(),
        "t.csv",
        csv.as_bytes(),
        &["--x", "1", "--y", "2", OUT[0], OUT[1]],
    );
    assert_refused(&o, dir.path(), &["PATH", "t.csv", "cells"]);
}

/// `df` as Parquet, zstd-compressed, as normscope writes its tables.
fn parquet(mut df: polars::prelude::DataFrame) -> Vec<u8> {
    use polars::prelude::*;
    let mut out = Vec::new();
    ParquetWriter::new(&mut out)
        .with_compression(ParquetCompression::Zstd(None))
        .finish(&mut df)
        .unwrap();
    out
}

/// A Parquet table of `rows` rows whose column `s` holds `bytes` bytes each (mostly one
/// letter): all the same value when `same` (the writer stores it once, in a dictionary page,
/// and decoding copies it into every row), else distinct (stored plain). Either way a file of
/// kilobytes that decodes to `rows * bytes`.
fn parquet_bomb(rows: usize, bytes: usize, same: bool) -> Vec<u8> {
    use polars::prelude::*;
    let s: Vec<String> = (0..rows)
        .map(|i| format!("{:08}{}", if same { 0 } else { i }, "a".repeat(bytes - 8)))
        .collect();
    parquet(
        DataFrame::new_infer_height(vec![
            Column::new("layer".into(), (0..rows as i64).collect::<Vec<_>>()),
            Column::new("s".into(), s),
        ])
        .unwrap(),
    )
}

#[test]
fn a_parquet_table_that_decodes_beyond_memory_is_refused_before_it_is_read() {
    use normscope::analyses::commands::table_bounds::extent;
    let dir = tempfile::tempdir().unwrap();
    let args = ["--x", "layer", "--y", "layer", OUT[0], OUT[1]];
    // 640 MB of text in a file of kilobytes, stored plain or as one dictionary entry repeated:
    // under a 1 GB address space (the preflight tests' limit) decoding it, then casting it to
    // text, would abort, so it is refused from what the file states.
    for same in [false, true] {
        let bomb = parquet_bomb(320, 2 << 20, same);
        assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
        let e = extent(Path::new("t.parquet"), &bomb).unwrap();
        assert_eq!(e.cells, 640);
        assert!(e.uncompressed >= 320 * (2 << 20), "same {same}: {e:?}");
        let o = plot_under(1_000_000, dir.path(), "t.parquet", &bomb, &args);
        assert_refused(&o, dir.path(), &["reading t.parquet", "table's size"]);
        // A small table of the same shape is read and drawn under the same limit.
        let small = parquet_bomb(4, 64, same);
        let o = plot_under(1_000_000, dir.path(), "t.parquet", &small, &args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::remove_file(dir.path().join("f.svg")).unwrap();
        std::fs::remove_file(dir.path().join("f.svg.manifest.json")).ok();
    }
    // A nested column (its values may be millions per row) is refused, named.
    use polars::prelude::*;
    let list = Series::new("x".into(), [1i64, 2, 3]);
    let df = DataFrame::new_infer_height(vec![
        Column::new("layer".into(), [1i64]),
        Column::new("s".into(), [list]),
    ])
    .unwrap();
    let o = plot_under(1_000_000, dir.path(), "t.parquet", &parquet(df), &args);
    assert_refused(
        &o,
        dir.path(),
        &["t.parquet", "flat columns", "column s is nested"],
    );
}

#[test]
fn axes_near_the_largest_f64_are_drawn_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let tables = [
        "layer,value\n-9e307,1\n0,2\n9e307,3\n",
        "layer,value\n1,-1.7e308\n2,0\n3,1.7e308\n",
        "layer,value,value_ci_low,value_ci_high\n1,-1e308,-1.7e308,1e308\n2,1e308,-1e308,1.7e308\n",
    ];
    for t in tables {
        let o = plot_in(
            dir.path(),
            "t.csv",
            t.as_bytes(),
            &["--x", "layer", "--y", "value", OUT[0], OUT[1]],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{t}: {err}");
        let svg = std::fs::read_to_string(dir.path().join("f.svg")).unwrap();
        // Ticks labelled in the values' own magnitude, not collapsed or infinite.
        assert!(
            (svg.contains("e307") || svg.contains("e308")) && !svg.contains("NaN"),
            "{t}"
        );
        std::fs::remove_file(dir.path().join("f.svg")).unwrap();
    }
    // A value f64 cannot hold is refused, naming the row.
    let o = plot_in(
        dir.path(),
        "t.csv",
        b"layer,value\n1,2\n2,inf\n",
        &["--x", "layer", "--y", "value", OUT[0], OUT[1]],
    );
    assert_refused(&o, dir.path(), &["--y", "finite numbers", "row 2 of t.csv"]);
}

#[test]
fn tables_that_do_not_parse_or_have_no_rows_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let xy = ["--x", "layer", "--y", "value", OUT[0], OUT[1]];
    let cases: [(&str, &[u8], &[&str]); 4] = [
        (
            "t.csv",
            b"layer,value\n1,2,3,4\n",
            &["PATH", "t.csv", "a CSV table"],
        ),
        (
            "t.parquet",
            b"PAR1 not a parquet file at all",
            &["PATH", "t.parquet", "a Parquet table"],
        ),
        (
            "t.csv",
            b"layer,value\n",
            &["PATH", "t.csv", "at least one row", "header only"],
        ),
        ("t.csv", b"", &["PATH", "t.csv", "a CSV table"]),
    ];
    for (name, bytes, names) in cases {
        let o = plot_in(dir.path(), name, bytes, &xy);
        assert_refused(&o, dir.path(), names);
    }
}

#[test]
fn unknown_columns_are_refused_naming_the_flag_file_and_columns() {
    let dir = tempfile::tempdir().unwrap();
    let csv = b"layer,value,depth\n1,2,3\n";
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &["--x", "foo", "--y", "value"],
            &["--x", "foo", "t.csv", "layer, value, depth"],
        ),
        (
            &["--x", "layer", "--y", "valeu"],
            &["--y", "t.csv", "did you mean 'value'"],
        ),
        (
            &["--x", "layer", "--y", "value", "--where", "dpeth=3"],
            &["--where", "dpeth", "t.csv"],
        ),
    ];
    for (args, names) in cases {
        let mut a = args.to_vec();
        a.extend(OUT);
        assert_refused(&plot_in(dir.path(), "t.csv", csv, &a), dir.path(), names);
    }
}

#[test]
fn titles_labels_and_values_that_cannot_be_drawn_are_refused() {
    use normscope::analyses::commands::plot::labels::{MAX_NAME_CHARS, MAX_TITLE_CHARS};
    let dir = tempfile::tempdir().unwrap();
    let long_title = "t".repeat(MAX_TITLE_CHARS + 1);
    let title_most = format!("at most {MAX_TITLE_CHARS} characters");
    let long_value = "v".repeat(MAX_NAME_CHARS + 1);
    let wide = "W".repeat(MAX_NAME_CHARS);
    let csv = format!("layer,value,run,{wide}\n1,2,a\tb,1\n2,3,{long_value},2\n");
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--title", long_title.as_str()],
            vec!["--title", title_most.as_str(), "no control characters"],
        ),
        (
            vec!["--title", "two\nlines"],
            vec!["--title", "two\\nlines", "no control characters"],
        ),
        (
            vec!["--by", "run", "--where", "layer=1"],
            vec!["--by", "a\\tb", "row 1 of t.csv", "no control characters"],
        ),
        (
            vec!["--by", "run", "--where", "layer=2"],
            vec!["--by", "row 2 of t.csv", "at most 40 characters"],
        ),
        (
            vec!["--y", wide.as_str()],
            vec!["--y", "wider than its axis"],
        ),
    ];
    for (extra, names) in cases {
        let mut a = vec!["--x", "layer", "--y", "value"];
        if extra[0] == "--y" {
            a.truncate(2);
        }
        a.extend(extra);
        a.extend(OUT);
        assert_refused(
            &plot_in(dir.path(), "t.csv", csv.as_bytes(), &a),
            dir.path(),
            &names,
        );
    }
}

#[test]
fn the_help_states_the_bounds_the_code_enforces() {
    use normscope::analyses::commands::plot::bounds::{
        MAX_PANELS, MAX_POINTS, MAX_SERIES, MAX_TABLE_CELLS,
    };
    use normscope::analyses::commands::plot::labels::{MAX_NAME_CHARS, MAX_TITLE_CHARS};
    let help = String::from_utf8(normscope(&["plot", "--help"]).stdout).unwrap();
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for said in [
        format!("at most {MAX_TABLE_CELLS} cells"),
        format!("at most {MAX_PANELS} panels"),
        format!("{MAX_SERIES} series"),
        format!("{MAX_POINTS} points"),
        format!("at most {MAX_TITLE_CHARS} characters"),
        format!("values of at most {MAX_NAME_CHARS}"),
    ] {
        assert!(help.contains(&said), "{said:?} not in: {help}");
    }
}
