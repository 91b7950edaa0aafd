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
