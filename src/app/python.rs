//! What the Python package (`python/`) exposes, read from the command line's own definition so
//! that the two cannot drift: each function's keyword arguments are its command's flags
//! (`--hidden-ratio` is `hidden_ratio`; `--lambda`, a Python keyword, is `lambda_`), with
//! clap's defaults and help; the docstrings ([`docstring`]) and the type stub
//! `python/normscope/__init__.pyi` ([`stub`]) are generated from them and from [`FUNCTIONS`].

use super::cli::Cli;
use std::any::TypeId;
use std::fmt::Write;

/// The Python type of a keyword argument.
///
/// # Examples
///
/// ```rust
/// use normscope::app::python::{Kind, params};
///
/// let p = params("mc");
/// let kind = |n: &str| p.iter().find(|x| x.name == n).unwrap().kind;
/// assert_eq!(kind("depth"), Kind::Int);
/// assert_eq!(kind("eps"), Kind::Float);
/// assert_eq!(kind("uniform"), Kind::Flag);
/// assert_eq!(kind("placements"), Kind::List);
/// assert_eq!(kind("preset"), Kind::Str);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `True` gives the flag, `False` or `None` leaves it out.
    Flag,
    /// An integer.
    Int,
    /// A float (written as Python's `repr`, which the flag's parser reads back exactly).
    Float,
    /// A string (a comma-separated list may also be given as a Python list).
    Str,
    /// A path (`str` or `os.PathLike`).
    Path,
    /// A repeatable flag: a list (or one value), one flag per item.
    List,
    /// A flag with an optional integer (`compare --finite-width [D]`): `True` or an int.
    FlagOrInt,
}

impl Kind {
    /// The type as the stub writes it.
    pub fn python(self) -> &'static str {
        match self {
            Kind::Flag => "bool",
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::Str => "str | Sequence[str]",
            Kind::Path => "str | os.PathLike[str]",
            Kind::List => "str | os.PathLike[str] | Sequence[str | os.PathLike[str]]",
            Kind::FlagOrInt => "bool | int",
        }
    }

    /// The name [`params`] passes to Python (`"flag"`, `"int"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Flag => "flag",
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::Str => "str",
            Kind::Path => "path",
            Kind::List => "list",
            Kind::FlagOrInt => "flag_or_int",
        }
    }
}

/// One keyword argument: a flag of the command.
///
/// # Examples
///
/// ```rust
/// use normscope::app::python::params;
///
/// let p = params("theory");
/// let depth = p.iter().find(|x| x.name == "depth").unwrap();
/// assert_eq!((depth.flag.as_str(), depth.default.as_deref()), ("--depth", Some("64")));
/// assert!(p.iter().any(|x| x.name == "lambda_" && x.flag == "--lambda"));
/// ```
#[derive(Clone, Debug)]
pub struct Param {
    /// The Python name (`hidden_ratio`).
    pub name: String,
    /// The flag (`--hidden-ratio`).
    pub flag: String,
    /// Its type.
    pub kind: Kind,
    /// clap's default as text, if it has one.
    pub default: Option<String>,
    /// The help text (clap's long help, on one paragraph).
    pub help: String,
}

/// A function of the Python package.
///
/// # Examples
///
/// ```rust
/// use normscope::app::python::FUNCTIONS;
///
/// let mc = FUNCTIONS.iter().find(|f| f.name == "mc").unwrap();
/// assert_eq!(mc.command, Some("mc"));
/// assert_eq!(mc.returns, "pl.DataFrame");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Function {
    /// The Python name.
    pub name: &'static str,
    /// The command whose flags are its keyword arguments, if any.
    pub command: Option<&'static str>,
    /// Flags of the command the function does not take (they print to the process's
    /// standard output, which a notebook does not show).
    pub skip: &'static [&'static str],
    /// Its positional parameters as the stub writes them (`load_placements`, `csv`).
    pub positional: &'static str,
    /// The return type as the stub writes it.
    pub returns: &'static str,
    /// The first paragraph of its docstring.
    pub summary: &'static str,
    /// What it returns, for the docstring's Returns section.
    pub returns_doc: &'static str,
    /// Doctest lines (`>>> ...` and the output), run by the Python tests.
    pub example: &'static str,
    /// Whether it takes `progress=` (a long run).
    pub progress: bool,
}

/// The functions of the Python package, in the order of `help(normscope)`.
pub const FUNCTIONS: &[Function] = &[
    Function {
        name: "theory",
        command: Some("theory"),
        skip: &[],
        positional: "",
        returns: "pl.DataFrame",
        summary: "Closed-form (infinite-width) metrics of every layer, as `normscope theory`.",
        returns_doc: "The tidy table `normscope theory` writes: one row per preset, metric and layer, \
            with the settings that made it.",
        example: ">>> import normscope
>>> df = normscope.theory(preset=\"pre,post\", depth=256, metrics=\"eff_depth\", layers=\"last\")
>>> df.select(\"preset\", \"value\").rows()
[('post', 128.0), ('pre', 5.128236013400938)]",
        progress: false,
    },
    Function {
        name: "mc",
        command: Some("mc"),
        skip: &[],
        positional: "",
        returns: "pl.DataFrame",
        summary: "Monte Carlo metrics on sampled finite-width networks, with 95% confidence \
            intervals, as `normscope mc`.",
        returns_doc: "The tidy table `normscope mc` writes: one row per preset, metric and layer \
            with its estimate, standard error and 95% interval, and the settings (seed included) \
            that made it.",
        example: ">>> import normscope
>>> df = normscope.mc(preset=\"pre,post\", depth=16, width=32, samples=8, metrics=\"stream_sq\", layers=\"last\")
>>> df.select(\"preset\", \"n\").rows()
[('post', 8), ('pre', 8)]",
        progress: true,
    },
    Function {
        name: "compare",
        command: Some("compare"),
        skip: &[],
        positional: "",
        returns: "pl.DataFrame",
        summary: "The closed form against Monte Carlo per metric and layer, as `normscope compare`.",
        returns_doc: "The table `normscope compare` writes: difference, interval, allowance and \
            status (agree, disagree, uninformative) per preset, metric and layer.",
        example: ">>> import normscope
>>> df = normscope.compare(preset=\"pre\", depth=8, width=64, samples=16, metrics=\"stream_sq\", layers=\"last\")
>>> df[\"status\"].to_list()
['agree']",
        progress: true,
    },
    Function {
        name: "expand",
        command: Some("expand"),
        skip: &[],
        positional: "",
        returns: "tuple[pl.DataFrame, str]",
        summary: "The exact expansion x_L = sum_j C_{L,j} B_j of one preset, as `normscope expand`.",
        returns_doc: "The coefficients as the table `--format csv` writes \
            (preset, depth, layer, source, expression, latex, value, missing), and the LaTeX \
            `align*` block `--format latex` writes.",
        example: ">>> import normscope
>>> coefs, latex = normscope.expand(preset=\"post\", depth=2)
>>> coefs[\"expression\"].to_list()
['q0^(-1/2) * (1 + g)^(-1)', 'q0^(-1/2) * (1 + g)^(-1)', '(1 + g)^(-1/2)']
>>> latex.splitlines()[2]
'\\\\begin{align*}'",
        progress: false,
    },
    Function {
        name: "train",
        command: Some("train"),
        skip: &[],
        positional: "",
        returns: "pl.DataFrame | None",
        summary: "Train presets on a seeded task with per-layer diagnostics, as `normscope train`.",
        returns_doc: "The training log `normscope train` writes (one value per row: step, layer, \
            metric, value, with the settings); None with `dump_init`, which writes its file \
            and trains nothing.",
        example: ">>> import normscope
>>> log = normscope.train(preset=\"pre,post\", branch=\"relu-mlp\", task=\"regression\", depth=4, width=16, steps=5, seeds=\"0\")
>>> log.filter(metric=\"eval_loss\")[\"step\"].unique().sort().to_list()
[0, 5]",
        progress: true,
    },
    Function {
        name: "presets",
        command: Some("presets"),
        skip: &[],
        positional: "",
        returns: "pl.DataFrame",
        summary: "The presets with their equations and sources, as `normscope presets`.",
        returns_doc: "One row per preset: preset, aliases, equation, source (the columns \
            `normscope presets` prints).",
        example: ">>> import normscope
>>> normscope.presets()[\"preset\"].head(3).to_list()
['pre', 'post', 'deepnorm']",
        progress: false,
    },
    Function {
        name: "reproduce",
        command: Some("reproduce"),
        skip: &["print_config"],
        positional: "",
        returns: "str | None",
        summary: "Regenerate the analyses into `out_dir`'s data/ and figures/, as \
            `normscope reproduce`.",
        returns_doc: "None once every analysis is in place (each whole or not at all); with \
            `list=True`, the analyses as `normscope reproduce --list` prints them.",
        example: ">>> import normscope
>>> normscope.reproduce(list=True).splitlines()[0].split(\"\\t\")[0]
'expansion'",
        progress: true,
    },
    Function {
        name: "load_placements",
        command: None,
        skip: &[],
        positional: "source: str | os.PathLike[str]",
        returns: "list[str]",
        summary: "Load a placement file (a path), or its TOML text, so that its presets can be \
            named by `preset=` in every later call of this process (as `--placements FILE`).",
        returns_doc: "The names of the presets it defines. Loading the same definitions again is \
            allowed; a name defined differently is refused (ValueError).",
        example: ">>> import normscope
>>> normscope.load_placements('''
... [[placement]]
... name = \"half-branch\"
... final_norm = \"layer\"
... [[placement.segment]]
... input = \"layer\"
... branch = \"0.5\"
... ''')
['half-branch']",
        progress: false,
    },
    Function {
        name: "csv",
        command: None,
        skip: &[],
        positional: "frame: pl.DataFrame",
        returns: "str",
        summary: "A table as the command line writes it in CSV (the same writer, byte for byte).",
        returns_doc: "The CSV text: a header line, then one line per row, with the CLI's float \
            and missing-value formatting.",
        example: ">>> import normscope, polars as pl
>>> normscope.csv(pl.DataFrame({\"x\": [0.1, None], \"y\": [\"a\", \"b\"]}))
'x,y\\n0.1,a\\n,b\\n'",
        progress: false,
    },
];

/// The Python name of a flag: dashes become underscores; a Python keyword gets a trailing `_`.
fn python_name(long: &str) -> String {
    let n = long.replace('-', "_");
    const KEYWORDS: &[&str] = &[
        "lambda", "from", "in", "is", "import", "global", "class", "def", "for", "with",
    ];
    if KEYWORDS.contains(&n.as_str()) {
        format!("{n}_")
    } else {
        n
    }
}

fn kind_of(arg: &clap::Arg) -> Kind {
    use clap::ArgAction;
    let t = arg.get_value_parser().type_id();
    match arg.get_action() {
        ArgAction::SetTrue => return Kind::Flag,
        ArgAction::Append => return Kind::List,
        _ => {}
    }
    let optional_value = arg.get_num_args().is_some_and(|n| n.min_values() == 0);
    let int = t == TypeId::of::<usize>() || t == TypeId::of::<u64>();
    if optional_value && int {
        Kind::FlagOrInt
    } else if int {
        Kind::Int
    } else if t == TypeId::of::<f64>() {
        Kind::Float
    } else if t == TypeId::of::<std::path::PathBuf>() {
        Kind::Path
    } else {
        Kind::Str
    }
}

fn subcommand(command: &str) -> Option<clap::Command> {
    use clap::CommandFactory;
    Cli::command().find_subcommand(command).cloned()
}

/// The keyword arguments of `command`'s function: its flags (help and version left out), in
/// the order `--help` lists them; empty for an unknown command.
pub fn params(command: &str) -> Vec<Param> {
    let Some(cmd) = subcommand(command) else {
        return Vec::new();
    };
    let skip = FUNCTIONS
        .iter()
        .find(|f| f.command == Some(command))
        .map_or(&[][..], |f| f.skip);
    cmd.get_arguments()
        .filter_map(|a| {
            let long = a.get_long()?;
            let name = python_name(long);
            if matches!(long, "help" | "version") || skip.contains(&name.as_str()) {
                return None;
            }
            let help = a
                .get_long_help()
                .or(a.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            Some(Param {
                name,
                flag: format!("--{long}"),
                kind: kind_of(a),
                default: a
                    .get_default_values()
                    .first()
                    .map(|v| v.to_string_lossy().into_owned()),
                help: help.split_whitespace().collect::<Vec<_>>().join(" "),
            })
        })
        .collect()
}

/// A default as a Python literal of its kind (`12`, `0.0001`, `'pre,post'`, `False`, `None`).
pub fn python_default(p: &Param) -> String {
    match (&p.default, p.kind) {
        (_, Kind::Flag) => "False".into(),
        (None, _) => "None".into(),
        (Some(d), Kind::Int) => d.clone(),
        (Some(d), Kind::Float) => match d.parse::<f64>() {
            Ok(v) if v.is_finite() => format!("{v:?}"),
            _ => format!("{d:?}"),
        },
        (Some(d), _) => format!("{d:?}"),
    }
}

/// Wraps `text` to lines of at most `width` characters, each starting with `indent`.
fn wrap(text: &str, indent: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for w in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + w.len() > width {
            let _ = writeln!(out, "{indent}{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{indent}{line}");
    }
    out
}

const PROGRESS_HELP: &str = "Show a progress bar (tqdm's, in a notebook or a terminal, when \
    tqdm is installed; else a line on standard error). The run releases the GIL, and Ctrl-C \
    (a notebook's interrupt) stops it with KeyboardInterrupt, writing nothing.";

/// The docstring of function `name` (numpy style: summary, parameters, returns, examples),
/// or `None` for an unknown name.
pub fn docstring(name: &str) -> Option<String> {
    let f = FUNCTIONS.iter().find(|f| f.name == name)?;
    let mut paragraphs = vec![f.summary.to_string()];
    if let Some(c) = f.command {
        paragraphs.push(format!(
            "The keyword arguments are the flags of `normscope {c}` (`--hidden-ratio` is \
             `hidden_ratio`), with its defaults and its checks: a bad value raises ValueError \
             with the command line's message. A list may stand for a comma-separated value. \
             The same settings give the same seeds and the same numbers as the command line."
        ));
    }
    let mut s = paragraphs
        .iter()
        .map(|p| wrap(p, "", 88))
        .collect::<Vec<_>>()
        .join("\n");
    let ps = f.command.map(params).unwrap_or_default();
    if !ps.is_empty() || f.progress {
        s.push_str("\nParameters\n----------\n");
        for p in &ps {
            let _ = writeln!(
                s,
                "{} : {}, default {}",
                p.name,
                p.kind.python(),
                python_default(p)
            );
            s.push_str(&wrap(&format!("{} ({})", p.help, p.flag), "    ", 88));
        }
        if f.progress {
            s.push_str("progress : bool, default False\n");
            s.push_str(&wrap(PROGRESS_HELP, "    ", 88));
        }
    }
    let _ = write!(
        s,
        "\nReturns\n-------\n{}\n",
        f.returns.replace("pl.", "polars.")
    );
    s.push_str(&wrap(f.returns_doc, "    ", 88));
    let _ = write!(s, "\nExamples\n--------\n{}\n", f.example);
    Some(s)
}

/// The type stub `python/normscope/__init__.pyi`: every function with its keyword arguments,
/// types, defaults and docstring. Regenerated by the tests (`NORMSCOPE_BLESS=1 cargo test
/// --release --test it -- python::`), never edited by hand.
pub fn stub() -> String {
    let mut s = String::from(
        "# Generated by normscope (normscope::app::python::stub) from the command line's own\n\
         # definition; regenerate with `NORMSCOPE_BLESS=1 cargo test --release --test it --\n\
         # python::`. Do not edit.\n\
         \"\"\"normscope from Python: the command line's engines, returning polars DataFrames.\"\"\"\n\n\
         import os\n\
         from collections.abc import Sequence\n\n\
         import polars as pl\n\n\
         __version__: str\n",
    );
    for f in FUNCTIONS {
        let mut args: Vec<String> = Vec::new();
        if !f.positional.is_empty() {
            args.push(f.positional.to_string());
        }
        let ps = f.command.map(params).unwrap_or_default();
        if !ps.is_empty() || f.progress {
            args.push("*".into());
        }
        for p in &ps {
            let default = python_default(p);
            let ty = if default == "None" && p.kind != Kind::Flag {
                format!("{} | None", p.kind.python())
            } else {
                p.kind.python().to_string()
            };
            args.push(format!("{}: {ty} = {default}", p.name));
        }
        if f.progress {
            args.push("progress: bool = False".into());
        }
        let doc = docstring(f.name).unwrap_or_default();
        let _ = write!(
            s,
            "\ndef {}(\n{}) -> {}:\n    r\"\"\"\n",
            f.name,
            args.iter()
                .map(|a| format!("    {a},\n"))
                .collect::<String>(),
            f.returns
        );
        for line in doc.lines() {
            if line.is_empty() {
                s.push('\n');
            } else {
                let _ = writeln!(s, "    {line}");
            }
        }
        s.push_str("    \"\"\"\n");
    }
    s
}
