"""Each function's DataFrame is the table the command line writes for the same settings:
written through the same CSV writer (``normscope.csv``), the bytes are equal. The settings
are given as Python values (ints, floats, lists), the flags as text."""

import math

import polars as pl
import pytest

import normscope

# (function, keyword arguments, the same settings as flags)
CASES = [
    ("theory",
     dict(preset=["pre", "post", "deepnorm"], depth=64, metrics="eff_depth,grad_sq",
          layers="log:4", hidden_ratio=2.0, branch="relu-mlp", init="he"),
     ["--preset", "pre,post,deepnorm", "--depth", "64", "--metrics", "eff_depth,grad_sq",
      "--layers", "log:4", "--hidden-ratio", "2", "--branch", "relu-mlp", "--init", "he"]),
    ("theory",
     dict(preset="post", depth=32, finite_width=64, metrics="grad_sq", layers="0,1", q0=0.5),
     ["--preset", "post", "--depth", "32", "--finite-width", "64", "--metrics", "grad_sq",
      "--layers", "0,1", "--q0", "0.5"]),
    ("mc",
     dict(preset="pre,post", depth=8, width=32, samples=6, seed=3, eps=1e-6,
          metrics="stream_sq,eff_depth", layers="last"),
     ["--preset", "pre,post", "--depth", "8", "--width", "32", "--samples", "6", "--seed", "3",
      "--eps", "0.000001", "--metrics", "stream_sq,eff_depth", "--layers", "last"]),
    ("mc",
     dict(preset="sandwich", branch="attention", depth=4, width=16, tokens=4, heads=2,
          samples=4, precision="f32", layers="all", metrics="corr"),
     ["--preset", "sandwich", "--branch", "attention", "--depth", "4", "--width", "16",
      "--tokens", "4", "--heads", "2", "--samples", "4", "--precision", "f32", "--layers", "all",
      "--metrics", "corr"]),
    ("compare",
     dict(preset="deepnorm", depth=8, width=64, samples=12, metrics="grad_sq", layers="log:3"),
     ["--preset", "deepnorm", "--depth", "8", "--width", "64", "--samples", "12",
      "--metrics", "grad_sq", "--layers", "log:3"]),
    ("compare",
     dict(preset="post", depth=8, width=32, samples=8, metrics="grad_sq", layers="0",
          finite_width=True),
     ["--preset", "post", "--depth", "8", "--width", "32", "--samples", "8",
      "--metrics", "grad_sq", "--layers", "0", "--finite-width"]),
    ("train",
     dict(preset="pre,post", branch="relu-mlp", task="regression", depth=3, width=8, steps=6,
          seeds="0..2", log_every=2, lr=3e-3),
     ["--preset", "pre,post", "--branch", "relu-mlp", "--task", "regression", "--depth", "3",
      "--width", "8", "--steps", "6", "--seeds", "0..2", "--log-every", "2", "--lr", "0.003"]),
]


@pytest.mark.parametrize("function,kwargs,flags", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_frame_is_the_command_lines_table(cli, function, kwargs, flags):
    df = getattr(normscope, function)(**kwargs)
    assert isinstance(df, pl.DataFrame) and df.height > 0
    expected = cli(function, *flags, "--out", "-").stdout.decode()
    assert normscope.csv(df) == expected


def test_expand_gives_the_csv_and_latex_the_command_line_writes(cli):
    coefs, latex = normscope.expand(preset="deepnorm", depth=5, subs="q0=1")
    flags = ["--preset", "deepnorm", "--depth", "5", "--subs", "q0=1"]
    assert normscope.csv(coefs) == cli("expand", *flags, "--format", "csv").stdout.decode()
    assert latex == cli("expand", *flags, "--format", "latex").stdout.decode()


def test_presets_are_the_listing(cli):
    lines = cli("presets").stdout.decode().splitlines()
    df = normscope.presets()
    assert df.columns == lines[0].split("\t")
    # The built-in presets first, then those this process loaded (other tests load some).
    builtin = [tuple(line.split("\t")) for line in lines[1:]]
    assert [tuple(r) for r in df.head(len(builtin)).iter_rows()] == builtin


def test_out_writes_the_command_lines_file(cli, tmp_path):
    kwargs = dict(preset="post", depth=16, metrics="eff_depth", layers="last")
    df = normscope.theory(**kwargs, out=tmp_path / "py.parquet")
    cli("theory", "--preset", "post", "--depth", "16", "--metrics", "eff_depth", "--layers",
        "last", "--out", str(tmp_path / "cli.parquet"))
    from_py = pl.read_parquet(tmp_path / "py.parquet")
    from_cli = pl.read_parquet(tmp_path / "cli.parquet")
    assert from_py.equals(from_cli) and from_py.equals(df)
    # The provenance sidecar, as the command line writes it (its command line differs).
    assert (tmp_path / "py.parquet.manifest.json").is_file()


def test_values_are_finite_or_missing():
    df = normscope.mc(preset="post", depth=4, width=16, samples=4, layers="all")
    assert all(v is None or math.isfinite(v) for v in df["value"].to_list())


def test_a_loaded_placement_is_a_preset(cli):
    names = normscope.load_placements(
        '[[placement]]\nname = "py-pre"\nreproduces = "pre"\nfinal_norm = "layer"\n'
        '[[placement.segment]]\ninput = "layer"\n')
    assert names == ["py-pre"]
    ours = normscope.theory(preset="py-pre,pre", depth=32, metrics="eff_depth", layers="last")
    values = dict(ours.select("preset", "value").iter_rows())
    assert values["py-pre"] == values["pre"]
    assert "py-pre" in normscope.presets()["preset"].to_list()


def test_a_placement_file_path_loads_as_the_flag_does(cli):
    from conftest import ROOT
    path = ROOT / "examples/placements/depth-mup.toml"
    assert normscope.load_placements(path) == ["depth-mup"]
    df = normscope.theory(preset="depth-mup", depth=64, metrics="eff_depth", layers="last")
    flags = ["--placements", str(path), "--preset", "depth-mup", "--depth", "64",
             "--metrics", "eff_depth", "--layers", "last"]
    assert normscope.csv(df) == cli("theory", *flags).stdout.decode()
