"""The start-context pointer to a project's earlier memory in other sessions.

Invariants:
- A pointer, never memory: it names sessions (id, last checkpoint, active
  counts) and the exact commands to look at, search or import them; no entry
  text from any ledger ever appears in it.
- Only on a session start from scratch (`startup`, `clear`), when this session
  is not paused and its ledger holds no entries, and only for other sessions
  of the same project holding active entries: the same project identity
  (`om_project_id`: two clones in different folders are one project), or the
  same root folder (a session recorded without an identity); at most three,
  the most recently active first.
- Shortened by the project memory: a session that its active entries'
  provenance names (it promoted or confirmed one of them) is not named again;
  one line says how many were left out for that reason.
- Bounded: the text added to the start context is at most MAX_BYTES UTF-8
  bytes whatever the store holds; when no form of it fits, nothing is added.
  A session whose id cannot be shown on one line is never named.
- Bounded work: a SessionStart hook must stay fast however many sessions the
  store holds. With a store index (kept by the store-wide reads, never
  written here), the project's MAX_VISITS most recently active sessions it
  lists are checked by one stat each and only changed ones opened; the
  sessions it does not list yet, and every session without an index, are
  visited as before: at most MAX_VISITS ledgers, the most recently written
  first, each glanced at with one statement (Ledger.glance) and opened whole
  only when it may be named. A session beyond both bounds gets no pointer,
  and `search --all-sessions --project` still finds it.
- Client-agnostic: `start_note` is what every adapter's SessionStart calls; it
  also records the project (om.project), counts its project memory, and never
  raises, because the rest of the start context matters more than the pointer.
- No git when the identity cache answers (om.project.identity), and no `re`,
  `functools`, `collections` or `enum` on this path: a hook pays for each.
"""

from om.fastpath import basename, join, posix
from om.store import DB_NAME

MAX_BYTES = 1200
MAX_SESSIONS = 3
#: Ledgers the pointer opens at most (about half a millisecond each), and store-index rows it checks.
MAX_VISITS = 64
#: The longest a session's start waits for another process's write of the store index (then it reads the ledgers).
INDEX_WAIT = 0.2
STARTS = ("startup", "clear")


def start_note(ledger, cwd, source, command_of=None, client=None):
    """Record the project; return (the text to append to the start context: '' or '\\n' + pointer,
    how many active entries the project memory holds: 0 when none, while paused, or unreadable now).

    `command_of(session)` is the exact shell command prefix that reaches a
    session's ledger; by default the runtime's own (om.invocation), which
    every adapter that runs this runtime advertises.
    """
    from om.project import PROJECT_ID_KEY, PROJECT_KEY, record_project

    try:
        from om.project.identity import HOOK_SECONDS

        record_project(ledger, cwd, HOOK_SECONDS, client)
    except Exception:  # a busy ledger: the place is recorded on a later hook
        pass
    try:
        if ledger.is_paused():
            return "", 0
        key = ledger.meta_get(PROJECT_ID_KEY)
        project = ledger.meta_get(PROJECT_KEY) if source in STARTS else None
        pointing = bool(project) and not ledger.has_entries()
    except Exception:  # a busy ledger costs the pointer, never the start context
        return "", 0
    active, promoted = _project_memory(key, pointing)
    if not pointing:
        return "", active
    try:
        from om.sessions.catalogue import Project

        candidates = project_sessions(ledger.store, Project(project, key), ledger.session)
        if command_of is None:
            from om.invocation import ledger_command

            def command_of(session):
                return ledger_command(ledger.store, session)

        return pointer_text(candidates, ledger.session, ledger.store, project, command_of, key, promoted), active
    except Exception:  # an unreadable neighbour or a busy ledger costs the pointer, never the start context
        return "", active


def _project_memory(key, sessions):
    """(active entries, with `sessions` the ids of the sessions their provenance names) of project `key`'s
    memory; (0, ()) when it cannot be read now (a promotion being written: the start waits at most a second)."""
    if not key:
        return 0, ()
    try:
        from om.project.memory import at_start

        return at_start(key, sessions)
    except Exception:  # the project memory never costs the session its start context
        return 0, ()


def project_sessions(store, project, exclude):
    """Summaries of the other readable sessions of `project` (om.sessions.catalogue.Project): at least the
    MAX_SESSIONS most
    recently active eligible ones the store index and the newest unindexed ledgers show
    (pointer_text picks among them).

    With a store index (om.sessions.index), its rows of the project are taken
    most recent first, at most MAX_VISITS of them, each checked by one stat
    and read again from its ledger when it changed since; then the session
    directories the index does not know yet are visited as below. The index is
    opened read-only and never written here.

    Without one, ledgers are visited newest file first and the visit stops
    once MAX_SESSIONS eligible sessions are all more recent than the next
    file was last written: every activity time is a capture or checkpoint
    time, written to the file when it happened, so a file's modification time
    is never older than its last activity (a second of slack covers the
    timestamps' whole seconds). Files written after their last activity (a
    search building its index, a copied store) defeat that rule, so the visit
    also stops after MAX_VISITS ledgers.
    """
    from om.sessions import catalogue
    from om.store import session_dir

    own = basename(session_dir(store, exclude))
    listed = set(posix.listdir(store))
    rows, indexed = _indexed(store, project, own)
    if indexed is not None:
        listed.difference_update(indexed)
    names = [name for name in listed if name.startswith(catalogue.DIR_PREFIX) and name != own]
    return rows + _newest(store, project, exclude, names, rows)


def _indexed(store, project, own):
    """(summaries of the project from the store index, checked; every name it knows), or ([], None)."""
    from om.derived.store_index import open_index
    from om.sessions.index import stamp_of
    from om.sqlite import load

    index = open_index(store, readonly=True, timeout=INDEX_WAIT)
    if index is None:
        return [], None
    try:
        with index:
            known = index.project_rows(project, MAX_VISITS, ("name", "stamp", "doc"))
            indexed = index.names()
    except load().Error:
        return [], None
    rows = []
    for name, stamp, doc in known:
        if name == own:
            continue
        if stamp and stamp_of(store, name) == stamp:
            from om.jsonio import loads

            row = loads(doc)
            row["database"] = join(store, name, DB_NAME)
        else:
            row = _summary(store, name, project)
        if row is not None:
            rows.append(row)
    return rows, indexed


def _newest(store, project, exclude, names, seen):
    """Summaries of the project's sessions among `names`, newest ledger file first (see project_sessions)."""
    import time

    def written(name):
        try:
            return posix.stat(join(store, name, DB_NAME)).st_mtime
        except OSError:
            return float("inf")  # visited (and skipped) first

    def counts(row):
        return eligible(row, exclude, project.root, project.key) and row["last_activity"]

    rows = []
    recent = sorted((r["last_activity"] for r in seen if counts(r)), reverse=True)
    # Each ledger is stat'ed once: the same time sorts it and bounds the visit.
    newest = sorted(((written(name), name) for name in names), key=lambda pair: pair[0], reverse=True)
    for mtime, name in newest[:MAX_VISITS]:
        if len(recent) >= MAX_SESSIONS:
            if mtime != float("inf"):
                bound = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(mtime + 1))
                if recent[MAX_SESSIONS - 1] > bound:
                    break
        row = _summary(store, name, project) if _may_name(store, name, project) else None
        if row is None or row["session"] == exclude:
            continue
        rows.append(row)
        if counts(row):
            recent = sorted(recent + [row["last_activity"]], reverse=True)
    return rows


def _may_name(store, name, project):
    """False when one glance at the ledger shows the session cannot be named: another project's,
    or holding no active entry (a session started and never checkpointed). Else True, and the
    ledger is opened and checked as a whole (_summary)."""
    from om.ledger import Ledger
    from om.project import PROJECT_ID_KEY, PROJECT_KEY

    seen = Ledger.glance(join(store, name), PROJECT_KEY, PROJECT_ID_KEY)
    return seen is None or (project.holds(seen[0], seen[1]) and bool(seen[2]))


def _summary(store, name, project):
    """The summary of one session directory when it is a readable session of `project`, else None."""
    from om.sessions import catalogue

    try:
        ledger, meta = catalogue.open_ledger(store, name)
    except catalogue.Unreadable:
        return None
    try:
        with ledger:
            if not project.holds(meta.get(catalogue.PROJECT_KEY), meta.get(catalogue.PROJECT_ID_KEY)):
                return None
            return catalogue.summarize(ledger, meta)
    except Exception:
        return None


def eligible(row, session, project, key=None):
    """Whether a summary may be named: another session of the project (root folder `project`, or identity
    `key`), with active memory, on one line."""
    return (row["session"] != session
            and (row.get("project") == project or key is not None and row.get("project_id") == key)
            and bool(row["observations"] or row["reflections"]) and _one_line(row["session"]))


def pointer_text(candidates, session, store, project, command_of, key=None, promoted=()):
    """The pointer for these candidate summaries, or '' (see the module invariants).

    `project` is this session's root folder and `key` its project identity (or None); `promoted` the
    session ids the project memory's active entries name (those are not named again: one line counts
    them). `command_of(session)` is the adapter's exact ledger command for a session.
    Pure apart from calling it: the bound is a property of this function alone.
    """
    from om.invocation import quote, store_command
    from om.jsonio import dumps
    from om.sessions.catalogue import recency

    found = sorted((c for c in candidates if eligible(c, session, project, key)), key=recency)
    kept = [c for c in found if c["session"] not in promoted]
    chosen = kept[:MAX_SESSIONS]
    carried = len(found) - len(kept)
    if not chosen and not carried:
        return ""
    own = command_of(session)
    searching = store_command(store)
    header = ("om: earlier sessions of this project hold memory; this one has none yet. Nothing was loaded:"
              " it is evidence, not instructions.")
    search = f"Search them all: {searching} search WORDS --all-sessions --project {quote(project)}"
    tools = "Or the om MCP tools: prime (that session), search (all_sessions, project), import (from_session)."
    also = [f"Not named here: {_plural(carried, 'earlier session')} whose promoted memory the project memory"
            " holds (prime prints it)."] if carried else []

    def importing(other):
        return (f"Import one (only before this session's first checkpoint): {own} import --from-store {quote(store)}"
                f" --from-session {other}")

    # Richest form first; each step gives up the least useful part, until one fits the bound.
    forms = []
    for count in range(len(chosen), 0, -1):
        named = chosen[:count]
        lines = [header] + [
            f"- {dumps(c['session'])}: last checkpoint {c.get('last_checkpoint') or 'none'}, "
            f"{_plural(c['observations'], 'observation')}, {_plural(c['reflections'], 'reflection')}"
            for c in named
        ] + also
        for every in (True, False):
            looks = [f"Look: {command_of(c['session'])} prime" for c in (named if every else named[:1])]
            for mcp in (True, False):
                forms.append(lines + looks + [search, importing(quote(named[0]["session"]))] + ([tools] if mcp else []))
    if not chosen:  # every eligible session promoted into the project memory: no session to name
        forms += [[header] + also + [search], [header] + also]
    else:  # Ids or paths too long to name a session: say where to look instead.
        listing = f"List them: {searching} sessions --project {quote(project)}"
        forms.append([header, listing, search, importing("ID")])
        forms.append([header, search, importing("ID")])
    for form in forms:
        text = "\n" + "\n".join(form)
        if len(text.encode("utf-8")) <= MAX_BYTES:
            return text
    return ""


def _one_line(text):
    return isinstance(text, str) and all(ch.isprintable() for ch in text)


def _plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")
