"""The package behaves like a Python library: Ctrl-C stops a run with KeyboardInterrupt and
leaves nothing behind, the GIL is released while it runs, progress is reported, the type
stub matches the functions, and every docstring's example runs."""

import ast
import doctest
import inspect
import pathlib
import threading
import _thread

import pytest

import normscope

LONG_MC = dict(preset="pre", depth=64, width=256, samples=100000, layers="last",
               metrics="stream_sq")


class interrupt_after:
    """Ctrl-C, as the terminal or a notebook's interrupt sends it, after `seconds` (cancelled
    when the block ends first, so that it cannot strike a later test)."""

    def __init__(self, seconds):
        self.timer = threading.Timer(seconds, _thread.interrupt_main)

    def __enter__(self):
        self.timer.start()

    def __exit__(self, *exc):
        self.timer.cancel()


def test_an_interrupted_mc_raises_and_writes_nothing(tmp_path):
    out = tmp_path / "mc.csv"
    with interrupt_after(1.0), pytest.raises(KeyboardInterrupt):
        normscope.mc(**LONG_MC, out=out)
    assert list(tmp_path.iterdir()) == []  # no table, no sidecar, no temporary file
    # The next run is not affected.
    df = normscope.mc(preset="pre", depth=4, width=8, samples=2, layers="last")
    assert df.height > 0


def test_an_interrupted_train_raises(tmp_path):
    with interrupt_after(1.0), pytest.raises(KeyboardInterrupt):
        normscope.train(preset="pre", branch="relu-mlp", task="regression", depth=8, width=64,
                        steps=1000000, seeds="0", out=tmp_path / "log.csv")
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_reproduce_leaves_no_analysis(tmp_path):
    # Ctrl-C as soon as warmup's own bar (its learning-rate searches) is seen: inside the
    # analysis, with its stage in flight.
    seen = []

    def press_ctrl_c(unit, *_):
        seen.append(unit)
        if unit == "searches":
            _thread.interrupt_main()

    with pytest.raises(KeyboardInterrupt):
        normscope._normscope.run(
            "reproduce", ["--only", "warmup", "--quick", "--out-dir", str(tmp_path)],
            press_ctrl_c)
    assert seen and set(seen) == {"searches"}
    # Nothing of the analysis is in place, and no staging folder or temporary file is left:
    # only the output folder's lock file (every run leaves it) and empty folders.
    left = [p for p in tmp_path.rglob("*") if not p.is_dir()]
    assert [p.name for p in left] == [".normscope.lock"], left
    assert not any(p.name.startswith(".normscope-") for p in tmp_path.rglob("*"))


def test_the_gil_is_released_while_a_run_works():
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.01)

    t = threading.Thread(target=count)
    t.start()
    normscope.mc(preset="pre,post", depth=32, width=128, samples=200, layers="last",
                 metrics="stream_sq")
    stop.set()
    t.join()
    assert len(ticks) > 5  # the other thread ran during the call


def test_progress_is_reported_and_ends_full():
    seen = []
    value, _ = normscope._normscope.run(
        "mc", ["--preset", "pre", "--depth", "32", "--width", "128", "--samples", "1500",
               "--layers", "last", "--metrics", "stream_sq"],
        lambda unit, position, length: seen.append((unit, position, length)))
    assert normscope._frame(value).height == 1
    assert seen and all(u == "networks" and n == 1500 for u, _, n in seen)
    assert [p for _, p, _ in seen] == sorted(p for _, p, _ in seen)
    assert seen[-1] == ("networks", 1500, 1500)


def test_progress_true_draws_a_bar_that_ends_full(capsys):
    normscope.mc(preset="pre", depth=32, width=128, samples=1500, layers="last",
                 metrics="stream_sq", progress=True)
    # tqdm's bar ("1500/1500 [...]") when tqdm is installed, else the line on stderr.
    assert "1500/1500" in capsys.readouterr().err



def help_defaults(cli, command):
    """`--flag: default` as `normscope <command> --help` prints them."""
    out, flag, found = cli(command, "--help").stdout.decode(), None, {}
    for line in out.splitlines():
        words = line.split()
        if words and words[0].startswith("--"):
            flag = words[0].split("=")[0].rstrip(",")
        elif words and words[0].startswith("-") and len(words) > 1 and words[1].startswith("--"):
            flag = words[1].rstrip(",")
        if flag and "[default: " in line:
            text = line.split("[default: ")[1].split("]")[0]
            found[flag] = "" if text == '""' else text  # clap shows an empty default as ""
    return found


def test_signature_defaults_are_the_help_texts(cli):
    for name, command, _ in normscope._normscope.functions():
        if command is None:
            continue
        shown = help_defaults(cli, command)
        params = {p[0]: p for p in normscope._normscope.params(command)}
        sig = inspect.signature(getattr(normscope, name)).parameters
        assert shown or command == "presets", command  # presets has no defaults
        for flag, text in shown.items():
            p = next((p for p in params.values() if p[1] == flag), None)
            if p is None:
                continue  # a flag the function leaves out (print_config)
            default = sig[p[0]].default
            if default is None:
                continue  # no clap default: the command picks it (train --depth), as in Python
            if p[2] == "int":
                assert default == int(text), (command, flag)
            elif p[2] == "float":
                assert default == float(text), (command, flag)
            elif p[2] != "flag":
                assert default == text, (command, flag)


def test_the_stub_matches_the_functions():
    stub = pathlib.Path(normscope.__file__).with_name("__init__.pyi")
    if not stub.is_file():
        stub = pathlib.Path(__file__).resolve().parents[1] / "normscope/__init__.pyi"
    tree = ast.parse(stub.read_text())
    defs = {d.name: d for d in tree.body if isinstance(d, ast.FunctionDef)}
    assert sorted(defs) == sorted(normscope.__all__)
    for name, d in defs.items():
        sig = inspect.signature(getattr(normscope, name))
        stubbed = [a.arg for a in d.args.args + d.args.kwonlyargs]
        assert stubbed == list(sig.parameters), name
        for a, default in zip(d.args.kwonlyargs, d.args.kw_defaults):
            assert ast.literal_eval(default) == sig.parameters[a.arg].default, (name, a.arg)
        assert ast.get_docstring(d) == inspect.cleandoc(getattr(normscope, name).__doc__)


def test_help_reads_the_flags():
    doc = normscope.mc.__doc__
    assert "hidden_ratio : float, default 4.0" in doc
    assert "(--hidden-ratio)" in doc and "progress : bool, default False" in doc


def test_the_docstring_examples_run():
    result = doctest.testmod(normscope, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 9 and result.failed == 0
