"""Reading Codex's `config.toml` (plugins, hook trust state, sandbox settings).

Invariant: read-only, and never raises on a missing file: `load(path)` returns
(data, None) for a readable config, (None, None) when there is none, and
(None, reason) when it is not TOML. `tomllib` reads it where Python has it
(3.11+); older Pythons get a reader for the subset Codex itself writes
(tables with quoted keys, strings, booleans, numbers, one-line arrays).
"""

import json


def load(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None, None
    text = raw.decode("utf-8", "replace")
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        return _mini_toml(text), None
    try:
        return tomllib.loads(text), None
    except Exception as e:
        return None, str(e)


def _mini_toml(text):
    data, table = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]") and not line.startswith("[["):
            table = data
            for part in _split_key(line[1:-1]):
                table = table.setdefault(part, {})
            continue
        if "=" in line:
            key, _, value = line.partition("=")
            target = table if table is not None else data
            try:
                target[_split_key(key.strip())[-1]] = json.loads(value.strip().replace("'", '"'))
            except ValueError:
                low = value.strip()
                if low in ("true", "false"):
                    target[_split_key(key.strip())[-1]] = low == "true"
    return data


def _split_key(key):
    parts, cur, quoted = [], "", False
    for ch in key:
        if ch == '"':
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return parts
