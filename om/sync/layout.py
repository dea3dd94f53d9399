"""Where `om sync` keeps its files in a store, and the names it accepts from a remote.

Invariants:
- Everything sync keeps lives under `<store>/sync/` (0700): config.json and
  state.json (0600), tombstones.jsonl, repo.git (om's own bare repository),
  lock, and mirrors/<remote>/<writer>/session-<hash>/memory.sqlite3. No v1
  reader and no hook looks there: the store's session directories are the
  `session-*` folders at its top.
- A mirror's folder is named by the session's hash, as in a store, so a
  writer's folder is laid out as a store is (`import --from-mirror` reads it as one).
- Names that come from a remote are used as keys, never as paths, until they
  pass `is_writer` / `is_session_path`; a remote's name is the user's, checked
  by `is_remote_name`.
- Import-light: no om module beyond om.fastpath and om.ids, so the readers of
  mirrors (listings, search, prime's project block) can ask where they are.
"""

from om.fastpath import join

SYNC_DIR = "sync"
CONFIG = "config.json"
STATE = "state.json"
TOMBSTONES = "tombstones.jsonl"
REPO = "repo.git"
LOCK = "lock"
MIRRORS = "mirrors"
WRITER_HEX = 32
KEY_HEX = 16
#: The project key of a session with none recorded.
NO_PROJECT = "0" * KEY_HEX
_HEX = frozenset("0123456789abcdef")


def sync_dir(store):
    return join(store, SYNC_DIR)


def config_path(store):
    return join(store, SYNC_DIR, CONFIG)


def state_path(store):
    return join(store, SYNC_DIR, STATE)


def tombstones_path(store):
    return join(store, SYNC_DIR, TOMBSTONES)


def repo_path(store):
    return join(store, SYNC_DIR, REPO)


def lock_path(store):
    return join(store, SYNC_DIR, LOCK)


def mirrors_root(store):
    return join(store, SYNC_DIR, MIRRORS)


def writer_dir(store, remote, writer):
    """The folder holding one writer's mirrors from one remote: laid out as a store."""
    return join(store, SYNC_DIR, MIRRORS, remote, writer)


def is_hex(text, length):
    return isinstance(text, str) and len(text) == length and _HEX.issuperset(text)


def is_writer(text):
    return is_hex(text, WRITER_HEX)


def is_remote_name(text):
    return (isinstance(text, str) and 1 <= len(text) <= 32 and text[0].isascii() and text[0].isalnum()
            and all(c.isascii() and (c.isalnum() or c in "-_") for c in text) and text == text.lower())


def session_path(key, session_hash):
    """The path of a session's file in a writer's tree."""
    return f"p/{key}/{session_hash}.jsonl"


def is_session_path(path):
    """(key, session hash) when `path` is `p/<16 hex>/<24 hex>.jsonl`, else None."""
    parts = path.split("/") if isinstance(path, str) else ()
    if len(parts) != 3 or parts[0] != "p" or not parts[2].endswith(".jsonl"):
        return None
    key, digest = parts[1], parts[2][: -len(".jsonl")]
    return (key, digest) if is_hex(key, KEY_HEX) and is_hex(digest, 24) else None


def mirror_writers(store):
    """[(remote, writer, folder)] of every writer folder under mirrors/, sorted; [] when there is none."""
    from om.fastpath import posix

    root = mirrors_root(store)
    found = []
    try:
        remotes = sorted(posix.listdir(root))
    except OSError:
        return []
    for remote in remotes:
        if not is_remote_name(remote):
            continue
        try:
            writers = sorted(posix.listdir(join(root, remote)))
        except OSError:
            continue
        found += [(remote, w, join(root, remote, w)) for w in writers if is_writer(w)]
    return found


def mirror_sessions(store):
    """[(remote, writer, session folder)] of every mirrored session, sorted."""
    from om.fastpath import posix

    found = []
    for remote, writer, folder in mirror_writers(store):
        try:
            names = sorted(posix.listdir(folder))
        except OSError:
            continue
        found += [(remote, writer, join(folder, n)) for n in names if n.startswith("session-")]
    return found
