//! One named series of a line plot and how it is drawn ([`Mark`]): a line, a dashed line,
//! steps, points with their intervals, a shaded band.

use crate::style::{DASHES, MARKERS, MC_COLOR};

/// How a series is drawn.
///
/// # Examples
///
/// [`Series::line`] draws a solid line, [`Series::points`] markers with their intervals:
///
/// ```rust
/// use normscope_figure::{Mark, Series};
///
/// let line = Series::line("closed form", 0, vec![(1.0, 2.0)]);
/// assert!(matches!(line.mark, Mark::Line));
/// let mc = Series::points("Monte Carlo", 0, &[(1.0, 2.0, 1.5, 2.5)]);
/// match &mc.mark {
///     Mark::Points { ci, .. } => assert_eq!(ci, &vec![(1.5, 2.5)]),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Clone, Debug)]
pub enum Mark {
    /// A solid line (closed form).
    Line,
    /// A dashed line (a second closed-form family).
    Dashed,
    /// A step line, each point `(k, y)` a level from `k - 1/2` to `k + 1/2` (a discrete
    /// distribution).
    Steps,
    /// Markers with vertical 95% confidence bars `(low, high)` per point (Monte Carlo).
    Points {
        /// The interval of each point, in the order of `points`.
        ci: Vec<(f64, f64)>,
        /// Whether each interval is open below and above: censored, it reaches past its drawn
        /// end (the lowest or highest value tried), which then gets an arrow instead of a cap
        /// ([`Series::open`]).
        open: Vec<(bool, bool)>,
    },
    /// A shaded band from each point `(x, low)` up to `high` (the spread of several runs
    /// around their median line), drawn under the lines.
    Band {
        /// The band's upper edge, in the order of `points`.
        high: Vec<f64>,
    },
}

/// One named series.
///
/// # Examples
///
/// A closed-form line in palette colour 1 and its Monte Carlo points: the points keep `(x, y)`,
/// the intervals go to the mark; colour 1 draws the long dash of [`DASHES`]`[1]`.
///
/// ```rust
/// use normscope_figure::{DASHES, Series};
///
/// let line = Series::line("Pre-LN", 1, vec![(1.0, 1.0), (2.0, 0.5)]);
/// assert_eq!(line.label, "Pre-LN");
/// assert_eq!(line.pattern(), DASHES[1]);
/// assert_eq!(line.pattern(), (16, 8));
/// let pts = Series::points("", 1, &[(1.0, 0.9, 0.8, 1.0), (2.0, 0.55, 0.5, 0.6)]);
/// assert_eq!(pts.points, vec![(1.0, 0.9), (2.0, 0.55)]);
/// assert_eq!(pts.color, 1);
/// ```
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label (empty: no legend entry).
    pub label: String,
    /// Points (x, y), x increasing.
    pub points: Vec<(f64, f64)>,
    /// Line or points with intervals.
    pub mark: Mark,
    /// Index into [`PALETTE`](crate::PALETTE), so a preset's line and points share a colour.
    pub color: usize,
}

impl Series {
    /// A closed-form line.
    pub fn line(label: impl Into<String>, color: usize, points: Vec<(f64, f64)>) -> Self {
        Series {
            label: label.into(),
            points,
            mark: Mark::Line,
            color,
        }
    }

    /// A shaded band `(x, low, high)` in colour `color`, without a legend entry (the spread
    /// across seeds around a labelled median line of the same colour).
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_figure::{Mark, Series};
    /// let band = Series::band(2, &[(0.0, 1.0, 3.0), (1.0, 0.5, 2.0)]);
    /// assert_eq!(band.points, vec![(0.0, 1.0), (1.0, 0.5)]);
    /// assert!(matches!(&band.mark, Mark::Band { high } if high == &vec![3.0, 2.0]));
    /// assert!(band.label.is_empty());
    /// ```
    pub fn band(color: usize, pts: &[(f64, f64, f64)]) -> Self {
        Series {
            label: String::new(),
            points: pts.iter().map(|p| (p.0, p.1)).collect(),
            mark: Mark::Band {
                high: pts.iter().map(|p| p.2).collect(),
            },
            color,
        }
    }

    /// Monte Carlo points `(x, y, ci_low, ci_high)`.
    pub fn points(label: impl Into<String>, color: usize, pts: &[(f64, f64, f64, f64)]) -> Self {
        Series {
            label: label.into(),
            points: pts.iter().map(|p| (p.0, p.1)).collect(),
            mark: Mark::Points {
                ci: pts.iter().map(|p| (p.2, p.3)).collect(),
                open: vec![(false, false); pts.len()],
            },
            color,
        }
    }

    /// Marks points' intervals as open below and above (`(below, above)` per point, in the
    /// order of `points`): censored, each reaches past its drawn end, which gets an arrow.
    /// No effect on other marks.
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_figure::{Mark, Series};
    /// let s = Series::points("Post-LN", 1, &[(24.0, 1e-5, 1e-5, 1e-5)]).open(vec![(true, false)]);
    /// assert!(matches!(&s.mark, Mark::Points { open, .. } if open == &vec![(true, false)]));
    /// ```
    pub fn open(mut self, flags: Vec<(bool, bool)>) -> Self {
        if let Mark::Points { open, .. } = &mut self.mark {
            assert_eq!(flags.len(), open.len(), "one flag pair per point");
            *open = flags;
        }
        self
    }

    /// The line's dash pattern: [`DASHES`] by palette index, the long dash for
    /// [`Mark::Dashed`].
    pub fn pattern(&self) -> (u32, u32) {
        match self.mark {
            Mark::Dashed => DASHES[1],
            _ => DASHES[self.color % DASHES.len()],
        }
    }

    /// What tells this series apart besides its colour: its kind (line or points), and its
    /// dash pattern or marker ([`MARKERS`]).
    pub fn look(&self) -> (bool, (u32, u32)) {
        match self.mark {
            // The grey entry is drawn with its interval bar, which no other entry has.
            Mark::Points { .. } if self.color == MC_COLOR => (true, (u32::MAX, 0)),
            Mark::Points { .. } => (true, (self.marker() as u32, 0)),
            _ => (false, self.pattern()),
        }
    }

    /// The marker of a points series: [`MARKERS`] by palette index; the grey Monte Carlo
    /// legend entry ([`MC_COLOR`]) stands for every preset's points and takes the first.
    pub fn marker(&self) -> usize {
        if self.color == MC_COLOR {
            0
        } else {
            self.color % MARKERS
        }
    }

    /// Every y value this series draws (points and interval ends).
    pub(crate) fn ys(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.points.iter().map(|p| p.1).collect();
        match &self.mark {
            Mark::Points { ci, .. } => v.extend(ci.iter().flat_map(|c| [c.0, c.1])),
            Mark::Band { high } => v.extend(high),
            _ => {}
        }
        v
    }
}

/// The corners of a step line through `points` (x increasing): each `(k, y)` a level from
/// `k - 1/2` to `k + 1/2`, joined by vertical rises.
pub(crate) fn step_path(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .iter()
        .flat_map(|&(k, y)| [(k - 0.5, y), (k + 0.5, y)])
        .collect()
}
