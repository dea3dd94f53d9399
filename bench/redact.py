"""Cost of `redact` on typical tool outputs, next to the hashing every capture
does anyway (sha256 of the UTF-8 text), measured in the same run.

Also the one-time costs a fresh hook process pays: importing `om.redact`, and
the first call that has to import `re` and compile the rules.

With --compare REV, the `om.redact` of another commit of this repository (exported with
`git archive`) is timed on the same texts in the same run, and each row adds this tree's
time over REV's: below 1.00 is faster, above is a regression.

    python bench/redact.py [--compare REV]
"""

import argparse
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from om_runs import export_commit  # noqa: E402

from om.redact import redact  # noqa: E402

# No trigger at all: a directory listing and a diff stat.
CLEAN_NO_TRIGGER = (
    "drwxr-xr-x  5 dev dev  4096 Mar  3 10:12 src\n"
    "-rw-r--r--  1 dev dev  1834 Mar  3 10:12 README.md\n"
    " src/om/ledger.py       | 120 +++++++++++++++------\n"
    " 3 files changed, 97 insertions(+), 41 deletions(-)\n"
)
# Triggers the precheck (": ", "key", "token", "passed") but holds no secret.
CLEAN_WITH_TRIGGERS = (
    "tests/unit/test_ledger.py::test_capture_key_is_kept PASSED            [ 12%]\n"
    "config = {\"key\": \"value\", \"max_tokens\": 4096, \"timeout\": 30}\n"
    "usage: prompt_tokens=1234 completion_tokens=567 total=1801\n"
    "commit 3f2a9c1e5b7d8f0a1c2e3b4d5f6a7b8c9d0e1f2a\nAuthor: Dev <dev@example.com>\n"
    "see https://docs.example.com/api#auth for details\n"
)
# Real-looking secrets among ordinary lines.
DIRTY = (
    "export OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n"
    "GITHUB_TOKEN=ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8\n"
    "aws_access_key_id = AKIAIOSFODNN7EXAMPL1\n"
    "DATABASE_URL=postgres://app:s3cr3t-pw@db.internal:5432/app\n"
    "curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA==' https://api.example.com\n"
    "{\"client_secret\": \"9f8e7d6c5b4a3210\", \"client_id\": \"app\"}\n"
)


# Only v1's rules fire: tokens and Bearer headers in a log.
V1_ONLY = (
    "GET /api/items 200 Authorization: Bearer abcdefghijklmnop0123456789.xyz\n"
    "using sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 for the run\n"
    "pushed with ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 to origin\n"
)
# Key block openings that never close: each begin searched to the end by a backtracking engine.
UNCLOSED = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1c2L0mbVt3H2yJ4aY\n"


def sized(unit, size):
    return (unit * (size // len(unit) + 1))[:size]


def per_call(fns, text, budget=0.3, rounds=9):
    """Median seconds per call of each of `fns` on `text`, their samples interleaved
    round by round (each sample loops for about budget/rounds s) so machine noise hits
    them alike."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fns[0](text)
        if time.perf_counter() - start > budget / rounds:
            break
        n *= 2
    samples = [[] for _ in fns]
    for _ in range(rounds):
        for fn, out in zip(fns, samples):
            start = time.perf_counter()
            for _ in range(n):
                fn(text)
            out.append((time.perf_counter() - start) / n)
    return [sorted(out)[rounds // 2] for out in samples]


def baseline(text):
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def fresh(codes, rounds=25):
    """Median wall seconds of a fresh `python -I -S -c code` per code, the
    codes interleaved round by round so machine noise hits them alike. Their
    bytecode goes to a cache of this run (-I ignores PYTHONPYCACHEPREFIX), never
    into the trees."""
    times = [[] for _ in codes]
    with tempfile.TemporaryDirectory() as cache:
        argv = [sys.executable, "-I", "-S", "-X", f"pycache_prefix={cache}", "-c"]
        for _ in range(rounds):
            for i, code in enumerate(codes):
                start = time.perf_counter()
                subprocess.run([*argv, code], check=True)
                times[i].append(time.perf_counter() - start)
    return [sorted(t)[len(t) // 2] for t in times]


def load_redact(root):
    """`redact` of the tree at `root`, as a module of its own beside this tree's."""
    spec = importlib.util.spec_from_file_location("om_redact_compared", os.path.join(root, "om", "redact.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.redact


CASES = (("clean, no trigger", CLEAN_NO_TRIGGER), ("clean, triggers the regexes", CLEAN_WITH_TRIGGERS),
         ("dirty", DIRTY), ("v1's rules only", V1_ONLY), ("unclosed key blocks", UNCLOSED))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", metavar="REV", help="also time the redact of this commit, in the same run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        other = None
        if args.compare:
            export_commit(args.compare, tmp)
            # The om package sat in plugin/ for a while (before and after, at the root).
            other = os.path.join(tmp, "plugin") if os.path.isdir(os.path.join(tmp, "plugin", "om")) else tmp
        run(other, args.compare)


def run(other, rev):
    other_redact = load_redact(other) if other else None
    for fn in (redact, other_redact):
        if fn:
            fn("password=hunter2hunter2")  # compile once, outside the timings
    head = f"{'case':<28}{'size':>9}{'redact us':>12}{'sha256 us':>12}{'ratio':>8}"
    print(head + (f"{'@' + rev + ' us':>16}{'this/' + rev:>12}" if rev else ""))
    for name, unit in CASES:
        for size in (2_000, 100_000):
            text = sized(unit, size)
            r, b, *o = per_call([redact, baseline] + ([other_redact] if other_redact else []), text)
            row = f"{name:<28}{size:>9}{r * 1e6:>12.1f}{b * 1e6:>12.1f}{r / b:>8.2f}"
            if o:
                row += f"{o[0] * 1e6:>16.1f}{r / o[0]:>12.2f}"
            print(row)

    trees = [("this tree", ROOT)] + ([(f"@{rev}", other)] if other else [])
    codes = ["pass"]
    for _, root in trees:
        prefix = f"import sys; sys.path.insert(0, {root!r}); "
        codes += [
            prefix + "import om.redact",
            prefix + "import om.redact as r; r.redact('plain text')",
            prefix + "import om.redact as r; r.redact('Bearer abc.def')",
            prefix + "import om.redact as r; r.redact('password=hunter2hunter2')",
        ]
    times = fresh(codes)
    bare = times[0]
    print()
    print("fresh process (python -I -S), median of 25 interleaved:")
    print(f"  bare interpreter                      {bare * 1e3:7.1f} ms  1.00")
    for i, (label, _) in enumerate(trees):
        imp, clean, v1_only, dirty = times[1 + 4 * i:5 + 4 * i]
        print(f"  {label}:")
        print(f"  + import om.redact                    {imp * 1e3:7.1f} ms  {imp / bare:.2f}")
        print(f"  + redact(clean text)                  {clean * 1e3:7.1f} ms  {clean / bare:.2f}")
        print(f"  + redact('Bearer abc.def')            {v1_only * 1e3:7.1f} ms  {v1_only / bare:.2f}")
        print(f"  + redact(dirty text): re + compile    {dirty * 1e3:7.1f} ms  {dirty / bare:.2f}")


if __name__ == "__main__":
    main()
