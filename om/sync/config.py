"""The writer's identity and remotes (config.json), what each remote has seen (state.json), durations.

Invariants:
- config.json and state.json are private files (0600) in the private sync
  folder (0700), each written whole (om.store.write_atomically): a kill leaves
  the old file or the new one. Neither is ever published.
- A store's writer id is 128 random bits (hex), made once by `om sync init`
  and replaced only by `--new-identity`. The config also records where the
  store is (`place`: the sync folder's device and inode, and a digest of the
  machine's id where it has one): a store copied to another place or machine
  (a restored backup, a VM image) no longer matches, and sync refuses to
  publish under the copied identity until `om sync init --new-identity`.
- A remote is {"kind": "git"|"folder", "url" | "origin" (the project folder
  whose `origin` it rides on) | "folder", "share": "all"|"entries",
  "project": {key, root} or None, "hold": seconds}.
- A file that is not what om wrote is an error naming it, never a guess.
"""

from om.errors import Conflict, InputError, NotFound, StoreError

FORMAT = 1
SHARES = ("all", "entries")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def duration(text):
    """Seconds of a duration such as `0`, `90s`, `30m`, `1h`, `2d`, `1w`; InputError otherwise."""
    value = str(text).strip().lower()
    if value.isdigit() and int(value) == 0:
        return 0
    number, unit = value[:-1], value[-1:]
    if unit not in _UNITS or not number.isascii() or not number.isdigit() or len(number) > 9:
        raise InputError(f"om: --hold {str(text)[:40]!r}: give a duration such as 0, 90s, 30m, 1h, 2d or 1w")
    return int(number) * _UNITS[unit]


def new_writer():
    from om.fastpath import posix

    return posix.urandom(16).hex()


def place(store):
    """Where the store is: {device, inode} of its sync folder, and a digest of the machine's id when it has one."""
    from om.fastpath import posix, sha256
    from om.sync.layout import sync_dir

    st = posix.stat(sync_dir(store))
    found = {"device": st.st_dev, "inode": st.st_ino, "machine": None}
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            with open(path, "rb") as f:
                raw = f.read(256).strip()
        except OSError:
            continue
        if raw:
            found["machine"] = sha256(b"om-sync\n" + raw).hexdigest()[:32]
            break
    return found


def _read_json(path, what):
    from om.jsonio import loads

    try:
        with open(path, "rb") as f:
            data = f.read(64 * 1024 * 1024)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise StoreError(f"om: cannot read {path}: {e.strerror or e}") from None
    try:
        value = loads(data.decode("utf-8"))
    except (UnicodeDecodeError, InputError):
        value = None
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise StoreError(f"om: {path} is not a {what} this om wrote (format {FORMAT})")
    return value


def _write_json(path, value):
    from om.jsonio import dumps
    from om.store import write_atomically

    try:
        write_atomically(path, (dumps(value, sort_keys=True) + "\n").encode("utf-8"), mode=0o600)
    except OSError as e:
        raise StoreError(f"om: cannot write {path}: {e.strerror or e}") from None


def load(store):
    """The store's sync config, or None when sync was never set up."""
    from om.sync.layout import config_path, is_writer

    value = _read_json(config_path(store), "sync config")
    if value is not None and not (is_writer(value.get("writer")) and isinstance(value.get("remotes"), dict)):
        raise StoreError(f"om: {config_path(store)} is not a sync config this om wrote")
    return value


def require(store):
    """The store's sync config; NotFound with the command that sets it up when there is none."""
    config = load(store)
    if config is None:
        raise NotFound(f"om: sync is not set up in store {store}; run om --store {store} sync init"
                       " (--remote URL | --remote origin | --folder DIR)")
    return config


def save(store, config):
    from om.sync.layout import config_path

    _write_json(config_path(store), config)


def check_place(store, config):
    """Conflict when the store is not where its identity was made (a copied store or VM image)."""
    now, then = place(store), config.get("place") or {}
    moved = (now["device"], now["inode"]) != (then.get("device"), then.get("inode"))
    other_machine = bool(now["machine"] and then.get("machine") and now["machine"] != then.get("machine"))
    if moved or other_machine:
        what = "another machine" if other_machine else "another place"
        raise Conflict(f"om: this store's sync identity (writer {config['writer']}) was made on {what}: a copied"
                       " store or machine image must not publish as the original; run om --store"
                       f" {store} sync init --new-identity")


def remote_names(config, only=None):
    names = sorted(config["remotes"])
    if only is None:
        return names
    if only not in config["remotes"]:
        listed = ", ".join(names) or "none"
        raise NotFound(f"om: no sync remote {only!r} in this store (its remotes: {listed})")
    return [only]


# -- state.json ---------------------------------------------------------------------


def load_state(store):
    from om.sync.layout import state_path

    value = _read_json(state_path(store), "sync state")
    if value is None:
        value = {"format": FORMAT}
    value.setdefault("remotes", {})
    value.setdefault("acks", [])
    return value


def save_state(store, state):
    from om.sync.layout import state_path

    _write_json(state_path(store), state)


def remote_state(state, name):
    """The state of remote `name` (created empty): last push, pending rewrite, writers seen, the outbox cache."""
    found = state["remotes"].setdefault(name, {})
    found.setdefault("last_pushed", None)
    found.setdefault("pending_rewrite", False)
    found.setdefault("last_sync", None)
    found.setdefault("writers", {})
    found.setdefault("published", {})
    found.setdefault("bundles", {})
    return found


def mark_rewrite(store, config):
    """After a forget in this store's own ledgers: every remote republishes without history at its next sync.

    The caller holds the sync lock (`lock`), so no sync running meanwhile can
    write back a state read before this.
    """
    state = load_state(store)
    for name in config["remotes"]:
        remote_state(state, name)["pending_rewrite"] = True
    save_state(store, state)


#: How long `om sync` waits for another sync of the same store (it exits at once), and `om forget` for one.
SYNC_WAIT = 0
FORGET_WAIT = 300


def lock(store, seconds, what):
    """The store's sync lock (one `om sync` at a time; forget waits for it): a context manager."""
    from om.filelock import FileLock
    from om.sync.layout import lock_path

    return FileLock(lock_path(store), seconds, what)
