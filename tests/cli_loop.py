"""Run `om` many times in one process: `python cli_loop.py OM-ARGS... < payloads`.

Each stdin line is a JSON string: the bytes one `om OM-ARGS` call reads on its
stdin. For each line the real `om.cli.main` runs in-process (so hundreds of
calls do not pay hundreds of interpreter start-ups) and one JSON line
`{"rc": int, "out": str, "err": str}` is printed and flushed before the next
call starts: a line on stdout means that call has returned.
"""

import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from om.cli import main  # noqa: E402


def run_once(argv, payload):
    real_in, real_out, real_err = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(payload.encode("utf-8", "surrogatepass")), encoding="utf-8")
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    try:
        rc = main(list(argv))
        return {"rc": rc, "out": sys.stdout.getvalue(), "err": sys.stderr.getvalue()}
    finally:
        sys.stdin, sys.stdout, sys.stderr = real_in, real_out, real_err


def loop(argv, lines, out):
    for line in lines:
        if not line.strip():
            continue
        result = run_once(argv, json.loads(line))
        out.write(json.dumps(result) + "\n")
        out.flush()


if __name__ == "__main__":
    loop(sys.argv[1:], sys.stdin, sys.stdout)
