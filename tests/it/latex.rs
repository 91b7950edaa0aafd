//! Every `.tex` that `normscope reproduce --quick` writes compiles with pdflatex without errors
//! or overfull boxes: each table's complete float (`<name>.tex`) in a one-column and a
//! two-column 10 pt article; its bare tabular (`<name>_tabular.tex`) in a `table` in a one-column
//! 10 pt article, at `\small` and at `\normalsize` in a two-column 10 pt one and at
//! `\normalsize` in a two-column 9 pt `extarticle`, and in a `table*`. A page-wide table
//! (its float a `table*`) is compiled in a `table*` of those two-column layouts instead, so it
//! must fit the page's width rather than a column's; the expansions
//! (`align*` blocks) in both layouts; plus `normscope expand --format latex`.
//!
//! `NORMSCOPE_LATEX_DIR=/tmp/x cargo test --release --test it latex::` checks the `.tex` of an
//! existing `reproduce --out-dir /tmp/x` (e.g. the full run) instead of a fresh quick run.
//!
//! Skipped, with the reason printed, when `pdflatex` is not on PATH (CI machines may lack a
//! TeX installation). Debian: `apt-get install texlive-latex-base texlive-latex-recommended
//! texlive-latex-extra texlive-science`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn have(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether `file` (e.g. `extarticle.cls`) is installed, when kpsewhich can tell.
fn tex_has(file: &str) -> bool {
    Command::new("kpsewhich")
        .arg(file)
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

/// Compiles `body` in a document of class `class` with `options`; returns the problems found
/// in the log (errors, overfull boxes), empty when clean.
fn compile(dir: &Path, stem: &str, class: &str, options: &str, body: &str) -> Vec<String> {
    let doc = format!(
        "\\documentclass[{options}]{{{class}}}\n\\usepackage[T1]{{fontenc}}\n\\usepackage{{amsmath,booktabs,siunitx}}\n\\begin{{document}}\nText.\n{body}\n\\end{{document}}\n"
    );
    std::fs::write(dir.join(format!("{stem}.tex")), doc).unwrap();
    let o = Command::new("pdflatex")
        .args(["-interaction=nonstopmode", "-halt-on-error"])
        .arg(format!("{stem}.tex"))
        .current_dir(dir)
        .output()
        .expect("pdflatex runs");
    let log = std::fs::read_to_string(dir.join(format!("{stem}.log")))
        .unwrap_or_else(|_| String::from_utf8_lossy(&o.stdout).into_owned());
    let mut bad: Vec<String> = log
        .lines()
        .filter(|l| l.starts_with('!') || l.contains("Overfull \\hbox"))
        .map(str::to_string)
        .collect();
    if !o.status.success() && bad.is_empty() {
        bad.push(format!("pdflatex exited with {}", o.status));
    }
    bad
}

#[test]
fn every_tex_compiles_in_one_and_two_columns() {
    if !have("pdflatex", "--version") {
        println!("skipped: pdflatex is not on PATH (install TeX Live to run this test)");
        return;
    }
    let nine_pt = tex_has("extarticle.cls");
    if !nine_pt {
        println!("note: extarticle.cls not found; the 9 pt layout is not checked");
    }
    // NORMSCOPE_LATEX_DIR=<out-dir> checks an existing run (e.g. the full one) instead.
    let out = tempfile::tempdir().unwrap();
    let root = match std::env::var_os("NORMSCOPE_LATEX_DIR") {
        Some(d) => PathBuf::from(d),
        None => {
            let o = Command::new(env!("CARGO_BIN_EXE_normscope"))
                .args(["reproduce", "--quick", "--out-dir"])
                .arg(out.path())
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "reproduce --quick failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            out.path().to_path_buf()
        }
    };
    let mut files = crate::common::files_with_ext(&root.join("data"), "tex");
    // `normscope expand --format latex` too, with a long-coefficient preset.
    let work = tempfile::tempdir().unwrap();
    for preset in ["admin", "deepnorm"] {
        let o = Command::new(env!("CARGO_BIN_EXE_normscope"))
            .args([
                "expand", "--preset", preset, "--depth", "3", "--format", "latex",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let p = work.path().join(format!("expand_{preset}.tex"));
        std::fs::write(&p, &o.stdout).unwrap();
        files.push(p);
    }
    files.sort();
    let tables = files
        .iter()
        .filter(|f| f.to_string_lossy().ends_with("_tabular.tex"))
        .count();
    assert!(
        tables >= 6,
        "expected the tables' bare tabulars, found {files:?}"
    );

    let mut failures = Vec::new();
    let mut runs = 0;
    for (k, f) in files.iter().enumerate() {
        let path = f.to_string_lossy().replace('\\', "/");
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let tabular = name.ends_with("_tabular.tex");
        let input = format!("\\input{{{path}}}");
        let mut cases: Vec<(&str, &str, String)> = Vec::new();
        // A page-wide table: its float is a `table*`, and it must fit the page's width.
        let float = if tabular {
            f.with_file_name(name.replace("_tabular.tex", ".tex"))
        } else {
            f.clone()
        };
        let wide = std::fs::read_to_string(&float).is_ok_and(|t| t.contains("\\begin{table*}"));
        if tabular && wide {
            let star = |size: &str| {
                format!(
                    "\\begin{{table*}}[t]\n\\centering{size}\n{input}\n\\caption{{Bare.}}\n\\end{{table*}}"
                )
            };
            cases.push(("article", "twocolumn,10pt", star("\\small")));
            cases.push(("article", "twocolumn,10pt", star("")));
            if nine_pt {
                cases.push(("extarticle", "twocolumn,9pt", star("")));
            }
        } else if tabular {
            let wrap = |size: &str| {
                format!(
                    "\\begin{{table}}[t]\n\\centering{size}\n{input}\n\\caption{{Bare.}}\n\\end{{table}}"
                )
            };
            cases.push(("article", "10pt", wrap("")));
            cases.push(("article", "twocolumn,10pt", wrap("\\small")));
            cases.push(("article", "twocolumn,10pt", wrap("")));
            cases.push((
                "article",
                "twocolumn,10pt",
                format!("\\begin{{table*}}[t]\n\\centering\n{input}\n\\end{{table*}}"),
            ));
            if nine_pt {
                cases.push(("extarticle", "twocolumn,9pt", wrap("")));
            }
        } else if wide {
            cases.push(("article", "twocolumn,10pt", input.clone()));
        } else {
            cases.push(("article", "10pt", input.clone()));
            cases.push(("article", "twocolumn,10pt", input.clone()));
        }
        for (i, (class, options, body)) in cases.iter().enumerate() {
            let bad = compile(work.path(), &format!("doc{k}_{i}"), class, options, body);
            runs += 1;
            if !bad.is_empty() {
                failures.push(format!("{name} in {class}[{options}]: {}", bad.join(" | ")));
            }
        }
    }
    println!("compiled {} files in {runs} documents", files.len());
    assert!(
        failures.is_empty(),
        "LaTeX problems:\n{}",
        failures.join("\n")
    );
}
