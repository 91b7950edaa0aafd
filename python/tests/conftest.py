"""Shared fixtures: the command line binary the package is compared with.

``NORMSCOPE_BIN`` names it (``.ci/run`` sets it); else ``target/release/normscope`` of this
checkout. A test that needs it and cannot find it fails, saying how to build it.
"""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli():
    path = pathlib.Path(os.environ.get("NORMSCOPE_BIN", ROOT / "target/release/normscope"))
    if not path.is_file():
        pytest.fail(f"no normscope binary at {path}: run `cargo build --release` first "
                    "(or set NORMSCOPE_BIN)")

    def run(*args, check=True):
        r = subprocess.run([str(path), *args], capture_output=True, cwd=ROOT)
        if check and r.returncode != 0:
            raise AssertionError(f"normscope {' '.join(args)}: {r.stderr.decode()}")
        return r

    return run
