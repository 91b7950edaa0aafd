"""Bad input raises ValueError with the command line's message (its `error: ` line), before
anything runs or is written."""

import pytest

import normscope

# (function, keyword arguments, the same settings as flags)
BAD = [
    ("mc", dict(depth=0), ["--depth", "0"]),
    ("mc", dict(depth=-1), ["--depth", "-1"]),
    ("mc", dict(samples=1), ["--samples", "1"]),
    ("theory", dict(preset="nope"), ["--preset", "nope"]),
    ("theory", dict(eps=1e-5), ["--eps", "1e-5"]),
    ("mc", dict(eps=float("nan")), ["--eps", "NaN"]),
    ("mc", dict(uniform="yes"), ["--uniform=yes"]),
    ("compare", dict(width=32, finite_width=64), ["--width", "32", "--finite-width", "64"]),
    ("train", dict(optimizer="adamw2"), ["--optimizer", "adamw2"]),
    ("expand", dict(preset="pre,post", depth=3), ["--preset", "pre,post", "--depth", "3"]),
    ("reproduce", dict(only="no-such-analysis", out_dir="/nonexistent/x"),
     ["--only", "no-such-analysis", "--out-dir", "/nonexistent/x"]),
]


@pytest.mark.parametrize("function,kwargs,flags", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_raises_the_command_lines_message(cli, function, kwargs, flags):
    r = cli(function, *flags, check=False)
    assert r.returncode == 2
    line = r.stderr.decode().strip()
    assert line.startswith("error: ") and "\n" not in line
    with pytest.raises(ValueError) as e:
        getattr(normscope, function)(**kwargs)
    assert str(e.value) == line[len("error: "):]


def test_numpy_numbers_are_numbers(cli):
    np = pytest.importorskip("numpy")
    ours = normscope.mc(preset="pre", depth=np.int64(4), width=8, samples=2, eps=np.float64(1e-6),
                        uniform=np.bool_(False), layers="last")
    flags = ["--preset", "pre", "--depth", "4", "--width", "8", "--samples", "2",
             "--eps", "0.000001", "--layers", "last"]
    assert normscope.csv(ours) == cli("mc", *flags).stdout.decode()


def test_a_list_for_a_single_value_is_refused():
    with pytest.raises(ValueError, match=r"^invalid --depth = \[8\]: one value"):
        normscope.mc(depth=[8])


def test_parquet_without_out_is_refused_as_on_the_command_line(cli):
    r = cli("theory", "--format", "parquet", "--depth", "4", check=False)
    with pytest.raises(ValueError) as e:
        normscope.theory(format="parquet", depth=4)
    assert "error: " + str(e.value) == r.stderr.decode().strip()


def test_a_bad_out_is_refused_before_the_run(tmp_path):
    with pytest.raises(ValueError, match="--out"):
        normscope.mc(depth=4, width=8, samples=2, out=tmp_path)  # a folder
    assert list(tmp_path.iterdir()) == []


def test_a_redefined_placement_is_refused():
    text = '[[placement]]\nname = "twice"\nfinal_norm = "layer"\n[[placement.segment]]\n'
    assert normscope.load_placements(text + 'input = "layer"\n') == ["twice"]
    assert normscope.load_placements(text + 'input = "layer"\n') == ["twice"]
    with pytest.raises(ValueError, match="already defined differently"):
        normscope.load_placements(text + 'input = "layer"\nbranch = "0.5"\n')


def test_a_missing_placement_file_raises():
    with pytest.raises((ValueError, OSError), match="no-such.toml"):
        normscope.load_placements("no-such.toml")


def test_csv_of_something_else_than_a_frame_is_refused():
    with pytest.raises(ValueError, match=r"invalid frame = dict: a polars DataFrame"):
        normscope.csv({"x": [1.0]})
    with pytest.raises(ValueError, match="not a table polars can read"):
        normscope._normscope.csv(b"not parquet")
