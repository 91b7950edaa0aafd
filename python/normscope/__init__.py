"""normscope from Python: the command line's engines, returning polars DataFrames.

Each function takes the flags of its command as keyword arguments (``--hidden-ratio`` is
``hidden_ratio``), with the same defaults and the same checks, and returns the table the
command writes as a polars DataFrame::

    import normscope
    df = normscope.theory(preset="pre,post", depth=256, metrics="eff_depth", layers="last")

Bad settings raise ValueError with the command line's one-line message. Long runs release the
GIL, stop on Ctrl-C with KeyboardInterrupt (writing nothing), and draw a progress bar with
``progress=True``. See ``help(normscope.mc)`` and the notebooks in examples/notebooks/.
"""

import inspect
import io
import numbers
import os
import sys

import polars

from . import _normscope

__version__ = _normscope.__version__
__all__ = [name for name, _, _ in _normscope.functions()]

_KINDS = {"flag": bool, "int": int, "float": float, "str": str, "path": str, "list": list,
          "flag_or_int": int}


def _literal(text, kind):
    """A default as the Python value the stub shows (``'12'`` -> 12, ``'False'`` -> False)."""
    if text == "None":
        return None
    if kind == "flag":
        return False
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    return text.strip('"')


def _is_bool(v):
    """Python's bool, or numpy's (``numpy.bool_``), without importing numpy."""
    return isinstance(v, bool) or getattr(getattr(v, "dtype", None), "kind", None) == "b"


def _value(v):
    """One value as the command line takes it: integers (numpy's too) as digits, other real
    numbers as the exact repr of their float, paths as paths."""
    if _is_bool(v):
        return str(bool(v))
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return repr(float(v))
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    return str(v)


def _is_sequence(v):
    return isinstance(v, (list, tuple, range)) or (
        hasattr(v, "__iter__") and not isinstance(v, (str, bytes, os.PathLike, dict)))


def _argv(params, settings):
    """Flags for ``settings``, each as ``--flag=value`` (a value starting with ``-`` stays a
    value): True gives a flag, False and None leave it out; a list stands for a
    comma-separated value where the command line takes one (strings), and gives a repeatable
    flag once per item. A list for any other setting is refused, naming the flag. An unknown
    name is passed on as a flag, for the command line's parser to refuse."""
    by_name = {p[0]: p for p in params}
    argv = []
    for name, v in settings.items():
        if v is None:
            continue
        p = by_name.get(name)
        flag = p[1] if p else "--" + name.rstrip("_").replace("_", "-")
        kind = p[2] if p else "str"
        if kind in ("flag", "flag_or_int") and _is_bool(v):
            if v:
                argv.append(flag)
        elif kind == "list":
            items = list(v) if _is_sequence(v) else [v]
            argv += [f"{flag}={_value(item)}" for item in items]
        elif _is_sequence(v):
            if kind != "str":
                raise ValueError(f"invalid {flag} = {v!r}: one value (a list stands only for "
                                 "a comma-separated setting)")
            argv.append(f"{flag}={','.join(_value(x) for x in v)}")
        else:
            argv.append(f"{flag}={_value(v)}")
    return argv


class _Bar:
    """The progress bar of ``progress=True``: tqdm's (``tqdm.auto``: a widget in a notebook)
    when tqdm is installed, else one line on standard error redrawn in place."""

    def __init__(self):
        self.bar = None
        self.unit = None
        try:
            from tqdm.auto import tqdm
            self.tqdm = tqdm
        except ImportError:
            self.tqdm = None

    def __call__(self, unit, position, length):
        if unit != self.unit:
            self.close()
            self.unit = unit
            if self.tqdm is not None:
                self.bar = self.tqdm(total=length, unit=" " + unit)
        if self.bar is not None:
            self.bar.total = length
            self.bar.update(position - self.bar.n)
        else:
            width = 30
            done = width * position // max(length, 1)
            sys.stderr.write(f"\r[{'=' * done}{' ' * (width - done)}] {position}/{length} {unit}")
            sys.stderr.flush()

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif self.unit is not None:
            sys.stderr.write("\n")
        self.unit = None


def _say(notes):
    for n in notes:
        print(f"note: {n}", file=sys.stderr)


def _frame(value):
    """A table from the extension (Parquet bytes) as a polars DataFrame; text and None as
    they are."""
    if isinstance(value, bytes):
        return polars.read_parquet(io.BytesIO(value))
    return value


def _call(command, params, settings, progress):
    bar = _Bar() if progress else None
    try:
        value, notes = _normscope.run(command, _argv(params, settings), bar)
    finally:
        if bar is not None:
            bar.close()
    _say(notes)
    return _frame(value)


def _signature(params, positional, takes_progress):
    ps = list(positional)
    for name, _flag, kind, default, _help in params:
        ps.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                    default=_literal(default, kind),
                                    annotation=_KINDS.get(kind, str)))
    if takes_progress:
        ps.append(inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=False,
                                    annotation=bool))
    return inspect.Signature(ps)


def _command_function(name, command, takes_progress):
    params = _normscope.params(command)

    def function(**settings):
        progress = settings.pop("progress", False) if takes_progress else False
        return _call(command, params, settings, progress)

    function.__signature__ = _signature(params, [], takes_progress)
    return function


def _expand(**settings):
    frame, latex, notes = _normscope.expand(_argv(_EXPAND_PARAMS, settings))
    _say(notes)
    return _frame(frame), latex


def load_placements(source):
    if isinstance(source, os.PathLike) or ("\n" not in source and "[[" not in source):
        return _normscope.load_placements(os.fspath(source), True)
    return _normscope.load_placements(source, False)


def csv(frame):
    if not isinstance(frame, polars.DataFrame):
        raise ValueError(f"invalid frame = {type(frame).__name__}: a polars DataFrame")
    buf = io.BytesIO()
    frame.write_parquet(buf)
    return _normscope.csv(buf.getvalue())


_EXPAND_PARAMS = _normscope.params("expand")
for _name, _command, _progress in _normscope.functions():
    if _name == "expand":
        _f = _expand
        _f.__signature__ = _signature(_EXPAND_PARAMS, [], False)
    elif _command is not None:
        _f = _command_function(_name, _command, _progress)
    else:
        _f = globals()[_name]
    _f.__name__ = _f.__qualname__ = _name
    _f.__module__ = __name__
    _f.__doc__ = _normscope.docstring(_name)
    globals()[_name] = _f
del _name, _command, _progress, _f
