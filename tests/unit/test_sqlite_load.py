"""om.sqlite loads SQLite's C module without functools, and is never worse than a plain import."""

import subprocess
import sys
import textwrap

from conftest import ROOT, isolated

# Runs in a fresh -I -S interpreter, as the hook does.
EXERCISE = """
import sys
sys.path.insert(0, {root!r})
{setup}
from om.sqlite import load
m = load()
loaded_functools = "functools" in sys.modules
conn = m.connect(":memory:", isolation_level=None)
conn.execute("CREATE TABLE t (x)")
# more distinct statements than the statement cache holds, each run twice
for i in range(300):
    for _ in range(2):
        conn.execute("INSERT INTO t VALUES (?)" + " " * i, (i,))
assert conn.execute("SELECT count(*), sum(x) FROM t").fetchone() == (600, 2 * sum(range(300)))
import functools
print(loaded_functools, load() is m, hasattr(functools, "reduce"), type(m).__name__)
"""


def _run(setup=""):
    code = EXERCISE.format(root=str(ROOT), setup=textwrap.dedent(setup))
    proc = subprocess.run([*isolated(), "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_sqlite_loads_without_importing_functools_and_caches_statements_correctly():
    # functools stays unloaded, and a later import of it gets the real module
    assert _run() == ["False", "True", "True", "module"]


def test_an_interpreter_that_already_loaded_functools_gets_a_plain_import():
    assert _run("import functools") == ["True", "True", "True", "module"]


def test_a_stand_in_that_cannot_build_the_cache_falls_back_to_the_ordinary_import():
    # An _functools without the C cache: the stand-in fails, the ordinary import
    # (real functools, pure-Python lru_cache) still gives a working module.
    setup = """
    fake = type(sys)("_functools")
    sys.modules["_functools"] = fake
    """
    # (_sqlite3 takes lru_cache from functools since CPython 3.11; earlier ones never need it.)
    needs_functools = str(sys.version_info >= (3, 11))
    assert _run(setup) == [needs_functools, "True", "True", "module"]
