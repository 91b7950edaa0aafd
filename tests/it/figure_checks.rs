//! The figure defect checks (`normscope_figure::inspect`) catch each kind of defect on a
//! figure made to have it, and pass a clean one; `reproduce::every_figure_passes_the_defect_checks`
//! runs them on every figure the analyses draw.

use normscope::figure::defects;
use normscope::figure::heatmap::{Heatmap, Panel};
use normscope::figure::{LinePlot, Series};

fn clean() -> LinePlot {
    let mut p = LinePlot::new(
        "Effective depth (linear branch)",
        "depth L",
        "effective depth",
    );
    p.series.push(Series::line(
        "Pre-LN",
        0,
        vec![(1.0, 1.0), (10.0, 5.0), (100.0, 50.0)],
    ));
    p.series.push(Series::line(
        "Post-LN",
        1,
        vec![(1.0, 1.0), (10.0, 2.0), (100.0, 3.0)],
    ));
    p
}

fn found(fig: &impl normscope::figure::Figure, what: &str) -> bool {
    defects(fig).unwrap().iter().any(|d| d.contains(what))
}

#[test]
fn figure_checks_catch_each_kind_of_defect() {
    assert_eq!(defects(&clean()).unwrap(), Vec::<String>::new());

    // Axes and a legend with no point in any series (a quick run's curves once were).
    let mut p = clean();
    for s in &mut p.series {
        s.points.clear();
    }
    assert!(found(&p, "no data drawn"), "empty");

    let mut p = clean();
    p.y_label = "eff_depth".into();
    assert!(found(&p, "code identifier"), "identifier");

    let mut p = clean();
    p.title = "Curves at lr 0.003000".into();
    assert!(found(&p, "unrounded number"), "unrounded");

    let mut p = clean();
    p.y_log = false;
    p.series[0].points = vec![(1.0, 0.001), (10.0, 0.1), (100.0, 1.0)];
    assert!(
        found(&p, "linear y axis over more than two decades"),
        "axis"
    );
    // Estimates over three decades whose intervals stay positive: a log axis was due. The
    // same estimates with an interval reaching below 0 (a cost, a difference): the axis must
    // show 0, so linear is right.
    let mut p = clean();
    p.y_log = false;
    let pts = [
        (1.0, 0.001, 0.0005, 0.002),
        (10.0, 0.1, 0.05, 0.2),
        (100.0, 1.0, 0.5, 2.0),
    ];
    p.series.push(Series::points("Admin", 2, &pts));
    assert!(
        found(&p, "linear y axis over more than two decades"),
        "positive"
    );
    p.series.pop();
    let pts = [
        (1.0, 0.001, -0.004, 0.006),
        (10.0, 0.1, 0.05, 0.2),
        (100.0, 1.0, 0.5, 2.0),
    ];
    p.series.push(Series::points("Admin", 2, &pts));
    p.series[0].points = vec![(1.0, 0.5), (100.0, 1.0)];
    p.series[1].points = vec![(1.0, 0.5), (100.0, 1.0)];
    assert!(!found(&p, "linear y axis"), "an interval below 0");

    // Palette colours 0 and 8 share a dash pattern: only their colour tells them apart.
    let mut p = clean();
    p.series[1].color = 8;
    assert!(found(&p, "differ only in colour"), "colour only");

    // Tick labels taller than their rows run together (a heatmap thins its x labels to fit
    // their columns, not its y labels).
    let cells: Vec<(u64, u64, f64)> = (0..60).map(|y| (0, y, 1.0 + y as f64)).collect();
    let map = Heatmap {
        x_label: "width d".into(),
        y_label: "depth L".into(),
        value_label: "deviation".into(),
        log10_range: (0.0, 2.0),
        panels: vec![Panel {
            title: "Post-LN".into(),
            cells,
        }],
        x_ticks: vec!["8".into()],
        y_ticks: (0..60).map(|y| format!("{}", 100 + y)).collect(),
        linear: None,
    };
    assert!(found(&map, " over "), "overlapping ticks");
}

/// Interval bars are plain strokes: a square marker (preset 1's) is not drawn inside a ring,
/// as plotters' `ErrorBar` would draw one at every point; and a preset's legend entry carries
/// its Monte Carlo marker on its line sample.
#[test]
fn interval_bars_draw_no_ring_and_legends_show_markers() {
    let mut p = clean();
    p.series.remove(0);
    p.series.push(Series::points(
        "",
        1,
        &[(10.0, 2.1, 1.9, 2.3), (100.0, 3.1, 2.8, 3.4)],
    ));
    let svg = String::from_utf8(
        normscope::figure::render(&p, std::path::Path::new("ring"))
            .unwrap()
            .svg,
    )
    .unwrap();
    assert!(!svg.contains("<circle"), "a circle was drawn");
    // Two points and the legend sample: three filled squares in preset 1's colour.
    let fill = "fill=\"#D55E00\"";
    let filled = svg
        .split("<rect")
        .skip(1)
        .filter(|r| {
            r.split('>')
                .next()
                .is_some_and(|attrs| attrs.contains(fill))
        })
        .count();
    assert_eq!(filled, 3, "filled squares in preset 1's colour");
}
