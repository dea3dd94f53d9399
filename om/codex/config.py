"""Reading Codex's `config.toml` (plugins, hook trust state, sandbox settings).

Invariant: read-only, and never raises on a missing file: `load(path)` returns
(data, None) for a readable config, (None, None) when there is none, and
(None, reason) when it cannot be read as TOML (om.tomlio: `tomllib` where Python
has it, else a reader that refuses what it cannot parse rather than misread it).
"""


def load(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None, None
    from om.tomlio import TomlError, loads

    try:
        return loads(raw.decode("utf-8", "replace")), None
    except TomlError as e:
        return None, str(e)
