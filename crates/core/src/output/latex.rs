//! LaTeX tables (booktabs + siunitx) ready to `\input` next to their CSVs.
//!
//! Every table is written twice ([`Table::files`]): `<name>.tex`, a complete `table` float with
//! caption and label, and `<name>_tabular.tex`, the bare `tabular` for a paper to wrap in its
//! own `table` or `table*`. Both need `\usepackage{booktabs,siunitx}`; each file's first line
//! says so.
//!
//! Numeric columns are siunitx `S` columns with a `table-format` computed from the column's
//! data, so numbers align on the decimal marker; a column of point values has one precision,
//! and a column of Monte Carlo estimates gives each value the precision of its own uncertainty:
//!
//! * integers ([`Cell::Int`]) print as they are;
//! * point values ([`Cell::Num`]): see [`NumFormat::of`] -- fixed-point with the decimals that
//!   give the column's largest magnitude [`SIG`] significant figures and its smallest at least
//!   [`MIN_SIG`], when the column spans at most [`MAX_SPAN`] decades (scaled by a per-column
//!   power of ten, shown on a header line of its own, when every entry is below 0.01 or at least 10^5), else
//!   scientific notation with [`SCI_SIG`] significant figures in every entry;
//! * Monte Carlo estimates ([`Cell::Pm`]) print as `value(uncertainty)` (siunitx's compact
//!   form, e.g. `1.293(9)` for 1.293 +- 0.009), the uncertainty rounded by
//!   [`round_uncertainty`] and the value rounded to the same decimal place; a per-column power
//!   of ten as above when every value is below 0.01 or at least 10^5.

use std::fmt::Write as _;

/// Significant figures of the largest magnitude in a fixed-point column.
pub const SIG: i32 = 4;

/// Significant figures of every entry in a scientific column (one spanning more than
/// [`MAX_SPAN`] decades, where the exponent carries the information).
pub const SCI_SIG: i32 = 3;

/// Decimals of an estimate and its interval when the interval has no finite width
/// ([`Cell::ci`]).
pub const FALLBACK_DECIMALS: usize = 2;

/// Header of an interval column ([`Cell::Interval`]): what the interval is.
pub const CI_HEADER: &str = "95\\% CI";

/// Fewest significant figures of the smallest magnitude in a fixed-point column.
pub const MIN_SIG: i32 = 3;

/// Widest span, in decades, of a fixed-point column (between the exponents of its largest and
/// smallest nonzero magnitudes); wider columns go scientific.
pub const MAX_SPAN: i32 = 3;

/// One table cell.
///
/// # Examples
///
/// ```rust
/// use normscope_core::output::latex::Cell;
///
/// assert_eq!(Cell::opt(Some(0.5)), Cell::Num(0.5));
/// assert_eq!(Cell::opt(None), Cell::Missing);
/// let pm = Cell::Pm(1.293, 0.009);
/// assert_ne!(pm, Cell::Num(1.293));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Text (LaTeX allowed; [`escape`] plain names first).
    Text(String),
    /// An integer, printed as it is.
    Int(i64),
    /// A point value; NaN prints `--`.
    Num(f64),
    /// A Monte Carlo estimate and its uncertainty (the 95% interval's half-width).
    Pm(f64, f64),
    /// A value printed with these decimals, whatever its column's others get: an estimate
    /// rounded to the place of its interval's half-width ([`Cell::ci`]).
    Fixed(f64, usize),
    /// An interval `[low, high]` in one text cell, both ends with these decimals (math mode,
    /// so minus signs are minus signs); an infinite end is written as an open end at
    /// `\infty`, a NaN end makes the cell `--`.
    Interval(f64, f64, usize),
    /// No value: `--`.
    Missing,
}

impl Cell {
    /// A point value, `--` when missing.
    pub fn opt(v: Option<f64>) -> Cell {
        v.map_or(Cell::Missing, Cell::Num)
    }

    /// An estimate and its 95% interval as two cells (the estimate, then one `[low, high]`
    /// cell), both rounded to the decimal place of the interval's half-width
    /// ([`uncertainty_decimals`]); [`FALLBACK_DECIMALS`] when the interval has no finite
    /// width (a point, or an end left open by censoring).
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_core::output::latex::Cell;
    /// // Half-width 0.178: two figures of a leading 1 (0.18), so two decimals.
    /// assert_eq!(
    ///     Cell::ci(0.7354, (0.5631, 0.9188)),
    ///     [Cell::Fixed(0.7354, 2), Cell::Interval(0.5631, 0.9188, 2)]
    /// );
    /// assert_eq!(Cell::ci(1.5, (1.0, f64::INFINITY))[1], Cell::Interval(1.0, f64::INFINITY, 2));
    /// ```
    pub fn ci(v: f64, (lo, hi): (f64, f64)) -> [Cell; 2] {
        let d =
            uncertainty_decimals((hi - lo) / 2.0).map_or(FALLBACK_DECIMALS, |d| d.max(0) as usize);
        [Cell::Fixed(v, d), Cell::Interval(lo, hi, d)]
    }

    /// A Monte Carlo row's value and its interval's half-width.
    pub fn pm_row(r: &crate::profile::Row) -> Cell {
        let (lo, hi) = r.interval();
        Cell::Pm(r.value, (hi - lo) / 2.0)
    }
}

/// A row of a [`Table`].
///
/// # Examples
///
/// [`Table::row`] appends cells, [`Table::group`] a heading over the rows that follow:
///
/// ```rust
/// use normscope_core::output::latex::{Cell, Row, Table};
///
/// let mut t = Table::new("Gains", "tab:gains", &["init", "g"]);
/// t.group("He");
/// t.row(vec![Cell::Text("relu".into()), Cell::Num(2.0)]);
/// assert_eq!(t.rows[0], Row::Group("He".into()));
/// assert_eq!(t.rows[1], Row::Cells(vec![Cell::Text("relu".into()), Cell::Num(2.0)]));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Row {
    /// One cell per column.
    Cells(Vec<Cell>),
    /// A heading spanning every column (e.g. `He, $g = 2$`), over the rows that follow.
    Group(String),
}

/// A booktabs table.
///
/// # Examples
///
/// A numeric column of 1.2549 and 12.5 gets 4 significant figures on its largest magnitude
/// (two decimals, [`NumFormat::of`]), 12.5 written exactly; the files are the float and the
/// bare tabular.
///
/// ```rust
/// use normscope_core::output::latex::{Cell, Table};
///
/// let mut t = Table::new("Stream growth", "tab:q", &["preset", "q_L"]);
/// t.row(vec![Cell::Text("Pre-LN".into()), Cell::Num(12.5)]);
/// t.row(vec![Cell::Text("Post-LN".into()), Cell::Num(1.2549)]);
/// let tab = t.tabular();
/// assert!(tab.starts_with("\\begin{tabular}"));
/// assert!(tab.contains("Pre-LN & 12.5 \\\\\n"));
/// assert!(tab.contains("Post-LN & 1.25 \\\\\n"));
/// assert!(t.table().contains("\\label{tab:q}"));
/// let [(float, _), (bare, _)] = t.files("q");
/// assert_eq!((float.as_str(), bare.as_str()), ("q.tex", "q_tabular.tex"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Caption (LaTeX).
    pub caption: String,
    /// `\label` key.
    pub label: String,
    /// Optional spanning headers above the column headers: `(text, first column, columns)`,
    /// each underlined with a `\cmidrule`.
    pub spans: Vec<(String, usize, usize)>,
    /// Column headers (LaTeX; `\n` breaks a header into lines).
    pub headers: Vec<String>,
    /// The rows.
    pub rows: Vec<Row>,
    /// Written as a page-wide `table*` ([`Table::table`]) because it cannot fit one column of
    /// a two-column page; its bare tabular then fits the page's width.
    pub wide: bool,
}

/// The rounding a point-value column gets.
///
/// # Examples
///
/// 1.5 and 12.25 span one decade: fixed-point, 4 significant figures on 12.25 (two decimals);
/// a value with fewer decimals is written exactly (`1.5`, `128`), others are rounded. 1e-6
/// and 1e3 span nine, more than [`MAX_SPAN`]: scientific with [`SCI_SIG`] = 3 figures.
///
/// ```rust
/// use normscope_core::output::latex::NumFormat;
///
/// let fixed = NumFormat::of(&[1.5, 12.25]);
/// assert_eq!(fixed, NumFormat::Fixed { decimals: 2, scale: 0 });
/// assert_eq!(fixed.input(1.5), "1.5");
/// assert_eq!(fixed.input(128.0), "128");
/// assert_eq!(fixed.input(2.0 / 3.0), "0.67");
/// assert_eq!(fixed.input(0.0), "0.00");
/// assert_eq!(fixed.input(f64::NAN), "{--}");
/// let sci = NumFormat::of(&[1e-6, 1e3]);
/// assert_eq!(sci, NumFormat::Sci { decimals: 2 });
/// assert_eq!(sci.input(1234.5), "1.23e3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumFormat {
    /// Fixed-point with `decimals` decimals, after dividing by `10^scale`.
    Fixed {
        /// Decimals after the decimal marker.
        decimals: usize,
        /// Power of ten divided out (0: none).
        scale: i32,
    },
    /// Scientific, `m.mmm e k`, with `decimals` decimals in the mantissa.
    Sci {
        /// Decimals of the mantissa.
        decimals: usize,
    },
}

/// `v` written exactly, when its shortest decimal form (the one that reads back as `v`) has at
/// most `decimals` decimals and is not zero: `128` rather than `128.000`, `0.5` rather than
/// `0.500000`, so trailing zeros never claim a precision the value does not need. A rounded
/// value keeps the column's decimals.
fn exact(v: f64, decimals: usize) -> Option<String> {
    if v == 0.0 || v.abs() >= 1e15 {
        return None;
    }
    let s = format!("{v}");
    let places = s.split_once('.').map_or(0, |(_, f)| f.len());
    (places <= decimals).then_some(s)
}

fn exp10(v: f64) -> i32 {
    v.abs().log10().floor() as i32
}

/// A per-column power of ten (a multiple of 3) for columns whose every magnitude is below 0.01
/// (from the largest) or at least 10^5 (from the smallest), else 0.
fn column_scale(e_lo: i32, e_hi: i32) -> i32 {
    if e_hi <= -3 {
        3 * e_hi.div_euclid(3)
    } else if e_lo >= 5 {
        3 * e_lo.div_euclid(3)
    } else {
        0
    }
}

impl NumFormat {
    /// The format of a column of point values: with `e_lo`, `e_hi` the decimal exponents of
    /// its smallest and largest nonzero finite magnitudes, fixed-point when
    /// `e_hi - e_lo <= MAX_SPAN`, with the decimals that give the largest [`SIG`] significant
    /// figures and the smallest at least [`MIN_SIG`] (so at most `MIN_SIG + MAX_SPAN` digits
    /// anywhere), after a per-column power of ten when every magnitude is below 0.01 or at
    /// least 10^5; scientific with [`SCI_SIG`] significant figures otherwise.
    pub fn of(values: &[f64]) -> NumFormat {
        let mags: Vec<f64> = values
            .iter()
            .filter(|v| v.is_finite() && **v != 0.0)
            .map(|v| v.abs())
            .collect();
        if mags.is_empty() {
            return NumFormat::Fixed {
                decimals: 0,
                scale: 0,
            };
        }
        let lo = mags.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = mags.iter().copied().fold(0.0, f64::max);
        let (e_lo, e_hi) = (exp10(lo), exp10(hi));
        if e_hi - e_lo > MAX_SPAN {
            return NumFormat::Sci {
                decimals: (SCI_SIG - 1) as usize,
            };
        }
        let scale = column_scale(e_lo, e_hi);
        NumFormat::Fixed {
            decimals: (SIG - 1 - (e_hi - scale))
                .max(MIN_SIG - 1 - (e_lo - scale))
                .max(0) as usize,
            scale,
        }
    }

    /// siunitx input for `v` (`{--}` when not finite).
    pub fn input(self, v: f64) -> String {
        if !v.is_finite() {
            return "{--}".into();
        }
        match self {
            NumFormat::Fixed { decimals, scale } => {
                if let Some(exact) = (scale == 0).then(|| exact(v, decimals)).flatten() {
                    return exact;
                }
                rounded(v / 10f64.powi(scale), decimals)
            }
            NumFormat::Sci { decimals } => {
                if v == 0.0 {
                    return format!("{:.decimals$}", 0.0);
                }
                // Round the mantissa first: 9.9996e-3 becomes 1.000e-2.
                format!("{v:.decimals$e}")
            }
        }
    }
}

/// The decimal place an uncertainty is rounded to: two significant figures when its leading
/// digit is 1 or 2, else one (so 0.009100 rounds to 0.009 and 0.02254 to 0.023; 0.0096 rounds
/// to 0.010, two figures of a leading 1). Returns the number of decimals, negative for tens,
/// hundreds, ...; None for a zero or non-finite uncertainty.
pub fn uncertainty_decimals(err: f64) -> Option<i32> {
    if !(err.is_finite() && err > 0.0) {
        return None;
    }
    // The leading digit from the printed form, immune to log10 rounding at powers of ten.
    let s = format!("{err:e}");
    let lead = s.as_bytes()[0] - b'0';
    let e: i32 = s[s.find('e')? + 1..].parse().ok()?;
    Some(if lead <= 2 { 1 - e } else { -e })
}

/// `(value, uncertainty)` rounded for print by [`uncertainty_decimals`], as decimal strings
/// with the same number of decimals (none when rounding to tens or more), e.g.
/// `(1.2931, 0.0091)` gives `("1.293", "0.009")` and `(2.4912, 0.02254)` gives
/// `("2.491", "0.023")`. None when the uncertainty is zero or not finite.
pub fn round_uncertainty(value: f64, err: f64) -> Option<(String, String)> {
    let d = uncertainty_decimals(err)?;
    if d >= 0 {
        let d = d as usize;
        Some((format!("{value:.d$}"), format!("{err:.d$}")))
    } else {
        let q = 10f64.powi(-d);
        Some((
            format!("{:.0}", (value / q).round() * q),
            format!("{:.0}", (err / q).round() * q),
        ))
    }
}

/// siunitx compact input `value(digits)` of a rounded pair, e.g. `1.293(9)`, `498.90(10)`.
fn compact(value: &str, err: &str) -> String {
    let digits = err.replace('.', "");
    let digits = digits.trim_start_matches('0');
    format!("{value}({})", if digits.is_empty() { "0" } else { digits })
}

/// Integer and decimal digit counts of a plain decimal string.
fn digits(s: &str) -> (usize, usize) {
    let s = s.trim_start_matches('-');
    match s.split_once('.') {
        Some((i, d)) => (i.len(), d.len()),
        None => (s.len(), 0),
    }
}

/// A column, laid out: its siunitx options (None for a text column), the cells' input, and the
/// header's suffix (a power of ten).
struct Laid {
    format: Option<String>,
    cells: Vec<String>,
    suffix: String,
}

fn scale_suffix(scale: i32) -> String {
    if scale == 0 {
        String::new()
    } else {
        format!("($\\times 10^{{{scale}}}$)")
    }
}

/// Lays out one column's cells.
fn lay(cells: &[&Cell]) -> Laid {
    let numeric = cells.iter().any(|c| {
        matches!(
            c,
            Cell::Int(_) | Cell::Num(_) | Cell::Pm(..) | Cell::Fixed(..)
        )
    });
    if !numeric {
        return Laid {
            format: None,
            cells: cells
                .iter()
                .map(|c| match c {
                    Cell::Text(s) => s.clone(),
                    Cell::Interval(lo, hi, d) => interval(*lo, *hi, *d),
                    _ => "--".into(),
                })
                .collect(),
            suffix: String::new(),
        };
    }
    let nums: Vec<f64> = cells
        .iter()
        .filter_map(|c| match c {
            Cell::Num(v) => Some(*v),
            _ => None,
        })
        .collect();
    let fmt = NumFormat::of(&nums);
    // Monte Carlo values: a column scale from the values.
    let pm_mags: Vec<f64> = cells
        .iter()
        .filter_map(|c| match c {
            Cell::Pm(v, _) if v.is_finite() && *v != 0.0 => Some(v.abs()),
            _ => None,
        })
        .collect();
    let pm_scale = if pm_mags.is_empty() {
        0
    } else {
        let lo = pm_mags.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = pm_mags.iter().copied().fold(0.0, f64::max);
        column_scale(exp10(lo), exp10(hi))
    };
    let (mut int, mut dec, mut unc, mut neg) = (1usize, 0usize, 0usize, false);
    let (mut exp_digits, mut exp_neg) = (0usize, false);
    let mut out = Vec::new();
    for c in cells {
        let s = match c {
            Cell::Text(t) => format!("{{{t}}}"),
            Cell::Interval(lo, hi, d) => format!("{{{}}}", interval(*lo, *hi, *d)),
            Cell::Missing => "{--}".into(),
            Cell::Int(i) => i.to_string(),
            Cell::Num(v) => fmt.input(*v),
            Cell::Fixed(v, d) if v.is_finite() => rounded(*v, *d),
            Cell::Fixed(..) => "{--}".into(),
            Cell::Pm(v, e) => {
                let q = 10f64.powi(pm_scale);
                match round_uncertainty(v / q, e / q) {
                    Some((vs, es)) => {
                        let cs = compact(&vs, &es);
                        unc = unc.max(cs.len() - vs.len() - 2);
                        cs
                    }
                    None if v.is_finite() => NumFormat::Fixed {
                        decimals: (SIG - 1 - exp10(*v / q)).max(0) as usize,
                        scale: 0,
                    }
                    .input(v / q),
                    None => "{--}".into(),
                }
            }
        };
        if !s.starts_with('{') {
            neg |= s.starts_with('-');
            let mantissa = s.split(['(', 'e']).next().unwrap_or("");
            let (i, d) = digits(mantissa);
            int = int.max(i);
            dec = dec.max(d);
            if let Some((_, x)) = s.split_once('e') {
                exp_neg |= x.starts_with('-');
                exp_digits = exp_digits.max(x.trim_start_matches('-').len());
            }
        }
        out.push(s);
    }
    let mut f = String::new();
    if neg {
        f.push('-');
    }
    let _ = write!(f, "{int}");
    if dec > 0 {
        let _ = write!(f, ".{dec}");
    }
    if unc > 0 {
        let _ = write!(f, "({unc})");
    }
    if exp_digits > 0 {
        let _ = write!(f, "e{}{exp_digits}", if exp_neg { "-" } else { "" });
    }
    let scale = match fmt {
        NumFormat::Fixed { scale, .. } if !nums.is_empty() => scale,
        _ => pm_scale,
    };
    Laid {
        format: Some(f),
        cells: out,
        suffix: scale_suffix(scale),
    }
}

/// First line of every table file.
pub const TABLE_PACKAGES: &str = "% generated by normscope; needs \\usepackage{booktabs,siunitx}";

impl Table {
    /// A table with `headers` and no rows.
    pub fn new(caption: impl Into<String>, label: impl Into<String>, headers: &[&str]) -> Self {
        Table {
            caption: caption.into(),
            label: label.into(),
            spans: Vec::new(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            wide: false,
        }
    }

    /// The same table, to be set across a two-column page (`table*`).
    pub fn page_wide(mut self) -> Self {
        self.wide = true;
        self
    }

    /// Appends a row of cells.
    pub fn row(&mut self, cells: Vec<Cell>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(Row::Cells(cells));
    }

    /// Appends a heading over the rows that follow.
    pub fn group(&mut self, heading: impl Into<String>) {
        self.rows.push(Row::Group(heading.into()));
    }

    /// The bare `tabular` (no float, no font size), to wrap in a paper's own `table`.
    pub fn tabular(&self) -> String {
        let n = self.headers.len();
        let cols: Vec<Laid> = (0..n)
            .map(|j| {
                let cells: Vec<&Cell> = self
                    .rows
                    .iter()
                    .filter_map(|r| match r {
                        Row::Cells(c) => c.get(j),
                        Row::Group(_) => None,
                    })
                    .collect();
                lay(&cells)
            })
            .collect();
        let spec: Vec<String> = cols
            .iter()
            .map(|c| match &c.format {
                None => "l".to_string(),
                Some(f) => format!("S[table-format={f}]"),
            })
            .collect();
        let mut s = String::new();
        let _ = writeln!(s, "\\begin{{tabular}}{{@{{}}{}@{{}}}}", spec.join(" "));
        s.push_str("\\toprule\n");
        if !self.spans.is_empty() {
            let mut line = Vec::new();
            let mut rules = String::new();
            let mut j = 0;
            for (text, first, count) in &self.spans {
                while j < *first {
                    line.push(String::new());
                    j += 1;
                }
                line.push(format!("\\multicolumn{{{count}}}{{c}}{{{text}}}"));
                let (a, b) = (first + 1, first + count);
                let _ = write!(rules, "\\cmidrule(lr){{{a}-{b}}}");
                j += count;
            }
            while j < n {
                line.push(String::new());
                j += 1;
            }
            let _ = writeln!(s, "{} \\\\\n{rules}", line.join(" & "));
        }
        // Headers split at `\n` into lines, bottom-aligned; a column's power of ten on a line
        // of its own below its name, so it does not widen the column.
        let lines: Vec<Vec<&str>> = self
            .headers
            .iter()
            .zip(&cols)
            .map(|(h, c)| {
                let mut l: Vec<&str> = h.split('\n').collect();
                if !c.suffix.is_empty() {
                    l.push(c.suffix.as_str());
                }
                l
            })
            .collect();
        let depth = lines.iter().map(Vec::len).max().unwrap_or(1);
        for row in 0..depth {
            let heads: Vec<String> = lines
                .iter()
                .zip(&cols)
                .map(|(h, c)| {
                    let k = (row + h.len()).checked_sub(depth);
                    let text = k.map_or("", |k| h[k]);
                    let last = row + 1 == depth;
                    match c.format {
                        Some(_) if !text.is_empty() || last => format!("{{{text}}}"),
                        _ => text.to_string(),
                    }
                })
                .collect();
            let _ = writeln!(s, "{} \\\\", heads.join(" & "));
        }
        s.push_str("\\midrule\n");
        let mut i = 0;
        for (k, r) in self.rows.iter().enumerate() {
            match r {
                Row::Group(h) => {
                    if k > 0 {
                        s.push_str("\\addlinespace\n");
                    }
                    let _ = writeln!(s, "\\multicolumn{{{n}}}{{@{{}}l}}{{{h}}} \\\\");
                }
                Row::Cells(_) => {
                    let line: Vec<&str> = cols.iter().map(|c| c.cells[i].as_str()).collect();
                    let _ = writeln!(s, "{} \\\\", line.join(" & "));
                    i += 1;
                }
            }
        }
        s.push_str("\\bottomrule\n\\end{tabular}\n");
        s
    }

    /// The complete float: `table` (`table*` when [`Table::page_wide`]), `\small`, the tabular,
    /// caption and label.
    pub fn table(&self) -> String {
        let env = if self.wide { "table*" } else { "table" };
        format!(
            "\\begin{{{env}}}[t]\n\\centering\\small\n{}\\caption{{{}}}\n\\label{{{}}}\n\\end{{{env}}}\n",
            self.tabular(),
            self.caption,
            self.label
        )
    }

    /// `<name>.tex` (the float) and `<name>_tabular.tex` (the bare tabular), each headed by
    /// [`TABLE_PACKAGES`].
    pub fn files(&self, name: &str) -> [(String, String); 2] {
        [
            (
                format!("{name}.tex"),
                format!(
                    "{TABLE_PACKAGES}; the bare tabular is {name}_tabular.tex\n{}",
                    self.table()
                ),
            ),
            (
                format!("{name}_tabular.tex"),
                format!(
                    "{TABLE_PACKAGES}; wrap in a {} (caption: see {name}.tex)\n{}",
                    if self.wide {
                        "table* (it fits a page, not a column)"
                    } else {
                        "table or table*"
                    },
                    self.tabular()
                ),
            ),
        ]
    }
}

/// A number for text or a caption, in math mode: 4 significant digits, scientific
/// `a \times 10^{b}` outside [1e-3, 1e5), `--` for NaN.
pub fn num(v: f64) -> String {
    if v.is_nan() {
        "--".into()
    } else {
        format!("${}$", math(v))
    }
}

/// Decimals that give 4 significant digits for |v| in [1e-3, 1e5); `None` outside (use
/// scientific notation there).
fn decimals(v: f64) -> Option<usize> {
    let a = v.abs();
    (1e-3..1e5)
        .contains(&a)
        .then(|| (3 - a.log10().floor() as i32).max(0) as usize)
}

/// A number in plain text with 4 significant digits (`1.235e-7` outside [1e-3, 1e5)), as the
/// claims ledger prints it.
pub fn plain(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    match decimals(v) {
        Some(d) => format!("{v:.d$}"),
        None => format!("{v:.3e}"),
    }
}

fn math(v: f64) -> String {
    if v.is_nan() {
        return "--".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    match decimals(v) {
        Some(d) => format!("{v:.d$}"),
        None => {
            let e = v.abs().log10().floor() as i32;
            format!("{:.3} \\times 10^{{{e}}}", v / 10f64.powi(e))
        }
    }
}

/// `v` with `decimals` decimals, without the sign of a value that rounds to zero (no
/// `-0.000`).
fn rounded(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.bytes().all(|b| matches!(b, b'-' | b'0' | b'.')) {
        s.trim_start_matches('-').to_string()
    } else {
        s
    }
}

/// `[low, high]` in math mode with `decimals` decimals; an infinite end is open at
/// `\infty`; `--` when an end is NaN.
///
/// # Examples
///
/// ```rust
/// use normscope_core::output::latex::interval;
/// assert_eq!(interval(-2.5, 0.0, 1), "$[-2.5, 0.0]$");
/// assert_eq!(interval(1.0, f64::INFINITY, 1), "$[1.0, \\infty)$");
/// assert_eq!(interval(f64::NEG_INFINITY, f64::INFINITY, 2), "$(-\\infty, \\infty)$");
/// assert_eq!(interval(f64::NAN, 1.0, 2), "--");
/// ```
pub fn interval(lo: f64, hi: f64, decimals: usize) -> String {
    if lo.is_nan() || hi.is_nan() {
        return "--".into();
    }
    let end = |v: f64| {
        if v.is_infinite() {
            if v > 0.0 { "\\infty" } else { "-\\infty" }.to_string()
        } else {
            rounded(v, decimals)
        }
    };
    let open = if lo.is_infinite() { '(' } else { '[' };
    let close = if hi.is_infinite() { ')' } else { ']' };
    format!("${open}{}, {}{close}$", end(lo), end(hi))
}

/// Escapes `_`, `%`, `&`, `#` for text cells.
pub fn escape(s: &str) -> String {
    s.replace('\\', "\\textbackslash{}")
        .replace('_', "\\_")
        .replace('%', "\\%")
        .replace('&', "\\&")
        .replace('#', "\\#")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncertainty_rounds_to_one_or_two_figures() {
        let r = |v, e| round_uncertainty(v, e).unwrap();
        assert_eq!(r(1.2931, 0.009100), ("1.293".into(), "0.009".into()));
        assert_eq!(r(2.4912, 0.02254), ("2.491".into(), "0.023".into()));
        // Leading 1: two figures, after the carry too.
        assert_eq!(r(498.93, 0.09679), ("498.93".into(), "0.10".into()));
        assert_eq!(r(31.803, 0.1051), ("31.80".into(), "0.11".into()));
        assert_eq!(r(0.49991, 2.139e-4), ("0.49991".into(), "0.00021".into()));
        assert_eq!(r(0.06106, 5.1e-4), ("0.0611".into(), "0.0005".into()));
        // Tens and more.
        assert_eq!(r(12345.0, 123.0), ("12350".into(), "120".into()));
        assert_eq!(r(12345.0, 470.0), ("12300".into(), "500".into()));
        assert_eq!(uncertainty_decimals(0.0), None);
        assert_eq!(uncertainty_decimals(f64::NAN), None);
        assert_eq!(uncertainty_decimals(0.1), Some(2));
        assert_eq!(uncertainty_decimals(0.3), Some(1));
        assert_eq!(compact("1.293", "0.009"), "1.293(9)");
        assert_eq!(compact("498.93", "0.10"), "498.93(10)");
        assert_eq!(compact("12350", "120"), "12350(120)");
    }

    #[test]
    fn estimates_and_their_ends_share_the_intervals_place() {
        // Each row to the place of its own interval's half-width, in S columns.
        let mut t = Table::new("c", "tab:c", &["fit", CI_HEADER]);
        t.row(Cell::ci(12.532_14, (10.1, 14.9)).to_vec());
        t.row(Cell::ci(0.043_21, (0.030_1, 0.055_9)).to_vec());
        t.row(Cell::ci(0.043_21, (-0.000_4, 0.087)).to_vec());
        t.row(Cell::ci(1.5, (1.0, f64::INFINITY)).to_vec());
        let s = t.tabular();
        // Half-widths 2.4 (one figure: one decimal), 0.0129 (two figures of a leading 1,
        // 0.013: three) and 0.0437 (one figure: two); an open end: the fallback.
        assert!(s.contains("12.5 & $[10.1, 14.9]$ \\\\"), "{s}");
        assert!(s.contains("0.043 & $[0.030, 0.056]$ \\\\"), "{s}");
        assert!(s.contains("0.04 & $[0.00, 0.09]$ \\\\"), "{s}");
        assert!(s.contains("1.50 & $[1.00, \\infty)$ \\\\"), "{s}");
        assert!(s.contains("S[table-format=2.3] l@{}"), "{s}");
        assert!(s.contains("{fit} & 95\\% CI \\\\"), "{s}");
        assert!(!t.table().contains("table*"));
        let wide = t.page_wide();
        assert!(wide.table().starts_with("\\begin{table*}[t]"));
        assert!(wide.table().ends_with("\\end{table*}\n"));
    }

    #[test]
    fn one_precision_per_column() {
        assert_eq!(
            NumFormat::of(&[1.283, 500.0, 0.4444]),
            NumFormat::Fixed {
                decimals: 3,
                scale: 0
            }
        );
        assert_eq!(
            NumFormat::of(&[0.001949, 0.007752]),
            NumFormat::Fixed {
                decimals: 3,
                scale: -3
            }
        );
        // 4 figures for the largest, at least 3 for the smallest.
        assert_eq!(
            NumFormat::of(&[0.9939, 46.87, 1.0]),
            NumFormat::Fixed {
                decimals: 3,
                scale: 0
            }
        );
        assert_eq!(
            NumFormat::of(&[5.4e-20, 0.6]),
            NumFormat::Sci { decimals: 2 }
        );
        let f = NumFormat::of(&[5.4e-20, 0.6]);
        assert_eq!(f.input(5.421e-20), "5.42e-20");
        assert_eq!(f.input(0.9996), "1.00e0");
        assert_eq!(f.input(f64::NAN), "{--}");
        assert_eq!(
            NumFormat::Fixed {
                decimals: 2,
                scale: 0
            }
            .input(-0.001),
            "0.00"
        );
    }

    #[test]
    fn tabular_formats_from_data() {
        let mut t = Table::new("c", "tab:x", &["preset", "$L$", "a", "b"]);
        t.row(vec![
            Cell::Text("Pre-LN".into()),
            Cell::Int(4),
            Cell::Num(1.283),
            Cell::Pm(1.2931, 0.0091),
        ]);
        t.row(vec![
            Cell::Text("Post-LN".into()),
            Cell::Int(1000),
            Cell::Num(500.0),
            Cell::Pm(498.93, 0.09679),
        ]);
        let s = t.tabular();
        assert!(s.contains("S[table-format=4]"), "{s}");
        assert!(s.contains("S[table-format=3.2]"), "{s}");
        assert!(s.contains("S[table-format=3.3(2)]"), "{s}");
        assert!(s.contains("Pre-LN & 4 & 1.28 & 1.293(9) \\\\"), "{s}");
        // 500 exactly: no trailing zeros claiming a rounding.
        assert!(s.contains("Post-LN & 1000 & 500 & 498.93(10) \\\\"), "{s}");
        let [(a, full), (b, bare)] = t.files("x");
        assert_eq!((a.as_str(), b.as_str()), ("x.tex", "x_tabular.tex"));
        assert!(full.contains("\\begin{table}") && full.contains("\\label{tab:x}"));
        assert!(!bare.contains("\\begin{table}") && bare.contains("\\begin{tabular}"));
        // Two-line headers, bottom-aligned; a group heading spans the columns.
        let mut t = Table::new("c", "tab:y", &["preset", "grad\nfirst/last"]);
        t.group("He");
        t.row(vec![Cell::Text("Pre-LN".into()), Cell::Num(1e-9)]);
        let s = t.tabular();
        assert!(
            s.contains(
                " & {grad} \\\\\n & {first/last} \\\\\npreset & {($\\times 10^{-9}$)} \\\\\n"
            ),
            "{s}"
        );
        assert!(
            s.contains("\\multicolumn{2}{@{}l}{He} \\\\\nPre-LN & 1.000 \\\\"),
            "{s}"
        );
    }
}
