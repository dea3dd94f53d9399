"""What `om project` answers: the project's name, its memory as text or JSON, a retirement.

Invariants: pure composition of om.project.identity, om.project.memory and
om.project.block for the command line and the MCP server alike (they print
what these return, nothing else), so the two front ends cannot drift.
"""

from om.project import block, memory
from om.project.home import project_home, project_session

#: `om project view` prints the whole memory, bounded like `view`.
VIEW_BYTES = 12_000


def name(directory):
    """(text, JSON value) naming the project that holds `directory`."""
    from om.store import database_path

    identity = memory.identity_of_directory(directory)
    value = identity.as_json()
    value["memory"] = {
        "store": project_home(),
        "session": project_session(identity.key),
        "database": database_path(project_home(), project_session(identity.key)),
        "active_entries": memory.active_count(identity.key),
    }
    how = ("its folder (not a git repository with commits)" if identity.kind == "folder"
           else f"root commit{'s' if len(identity.roots) > 1 else ''} {', '.join(r[:12] for r in identity.roots)}")
    if not identity.known:
        how = "its folder, until git names its root commits"
    text = (f"project {identity.key}: {identity.root}, known by {how}; "
            f"{value['memory']['active_entries']} active entries in its memory ({value['memory']['database']})\n")
    return text, value


def view(directory, as_json=False, everything=False, store=None):
    """(text, None) for the quoted view; (None, JSON) for --json (active) and --all (every entry).

    With `store`, what other machines published of the project (its om sync mirrors) is included.
    """
    import time

    identity = memory.identity_of_directory(directory)
    found = memory.with_mirrored(memory.memory_entries(identity), memory.mirrored_entries(store, identity.key))
    if everything:
        return None, found
    if as_json:
        return None, [e for e in found if e["active"]]
    text = block.render(found, identity.key, time.time(), VIEW_BYTES, memory.view_command(identity))
    return (text or f"# om project memory: project {identity.key} holds no active entry.\n"), None


def retire(directory, args, ledger):
    identity = memory.identity_of_directory(directory) if ledger is None or args.project else \
        memory.identity_of_session(ledger)
    return memory.retire(identity, args.id, args.reason, args.replacement, ledger)
