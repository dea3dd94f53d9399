"""What a remote holds is data, never trusted: malformed session files, odd tree names, other formats."""

import json
import subprocess

import pytest

from sync_support import Machine, bare_remote, mirror_texts, mirrors


def _git(git_dir, *args, input=None):
    r = subprocess.run(["git", "--git-dir", str(git_dir), *args], input=input, capture_output=True, check=True)
    return r.stdout.decode().strip()


def _blob(git_dir, data):
    return _git(git_dir, "hash-object", "-w", "--stdin", input=data)


def _tree(git_dir, entries):
    """A tree object from raw entries [(mode, name bytes, sha)], written as git would not (`--literally`)."""
    raw = b"".join(mode.encode() + b" " + name + b"\0" + bytes.fromhex(sha) for mode, name, sha in
                   sorted(entries, key=lambda e: e[1]))
    return _git(git_dir, "hash-object", "-t", "tree", "-w", "--literally", "--stdin", input=raw)


def _commit(git_dir, tree):
    return _git(git_dir, "-c", "user.name=x", "-c", "user.email=x@example.com", "commit-tree", tree, "-m", "x")


def _session(session, key="0" * 16, text="a fine line"):
    from om.ids import session_hash

    header = {"format": 1, "type": "session", "session": session, "project": {"key": None}, "share": "all",
              "created": None, "last_activity": None, "meta": {"cursor": 0, "last_checkpoint_at": None}}
    source = {"type": "source", "seq": 1, "id": "s-" + "a" * 24, "kind": "user", "timestamp": "2026-01-01T00:00:00Z",
              "text": text, "truncated": False}
    data = (json.dumps(header) + "\n" + json.dumps(source) + "\n").encode()
    return f"{key}", session_hash(session), data


def _publish(git_dir, writer, files, fmt=1, label="evil"):
    """Put a writer's ref on the remote whose tree holds `files` {path bytes: (mode, data)}."""
    root = {}
    for path, (mode, data) in files.items():
        parts = path.split(b"/")
        node = root
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = (mode, _blob(git_dir, data))

    def write(node):
        entries = []
        for name, value in node.items():
            if isinstance(value, dict):
                entries.append(("40000", name, write(value)))
            else:
                entries.append((value[0], name, value[1]))
        return _tree(git_dir, entries)

    root[b"writer.json"] = ("100644", _blob(git_dir, json.dumps({"format": fmt, "writer": writer, "label": label})
                                            .encode()))
    commit = _commit(git_dir, write(root))
    _git(git_dir, "update-ref", f"refs/om/v1/w/{writer}", commit)


@pytest.fixture
def remote_dir(tmp_path):
    bare_remote(tmp_path / "remote.git")
    return tmp_path / "remote.git"


def test_hostile_remote_content_is_reported_and_the_good_parts_still_read(tmp_path, remote_dir):
    evil = "e" * 32
    good_key, good_hash, good = _session("fine-session")
    bad_key, bad_hash, _ = _session("broken-session")
    utf_key, utf_hash, _ = _session("latin1-session")
    files = {
        f"p/{good_key}/{good_hash}.jsonl".encode(): ("100644", good),
        f"p/{bad_key}/{bad_hash}.jsonl".encode(): ("100644", b'{"format":1,"type":"session"\nnot json\n'),
        f"p/{utf_key}/{utf_hash}.jsonl".encode(): ("100644", b"\xff\xfe not utf-8\n"),
        b"../x": ("100644", b"escape attempt"),
        b"p/\xff.jsonl": ("100644", b"odd name"),
        b"link": ("120000", b"/etc/passwd"),
        b"tombstones.jsonl": ("100644", b"{not a tombstone}\n\xff\n"),
    }
    _publish(remote_dir, evil, files)
    _publish(remote_dir, "f" * 32, {f"p/{good_key}/{good_hash}.jsonl".encode(): ("100644", good)}, fmt=2)
    a = Machine(tmp_path, "a")
    a.capture("s1", "mine")
    a.init("--remote", "file://" + str(remote_dir))
    r = a.om("sync")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r
    assert "not om's files, ignored" in r.stderr and "broken-session" not in r.stderr
    assert "not UTF-8" in r.stderr and "is not JSON" in r.stderr
    assert "publishes format 2; this om reads format 1" in r.stderr
    assert mirror_texts(a) == ["a fine line"]
    assert [w for w, _ in mirrors(a)] == [evil]
    assert not (tmp_path / "x").exists() and not (a.store / "sync" / "x").exists()
    again = a.om("sync")
    assert again.returncode == 0 and mirror_texts(a) == ["a fine line"], again


def test_a_session_file_that_lies_about_its_session_or_ids_is_skipped(tmp_path, remote_dir):
    key, digest, good = _session("honest")
    _, _, other = _session("someone-else")
    files = {
        f"p/{key}/{digest}.jsonl".encode(): ("100644", other),  # names another session than its file
        f"p/{'1' * 16}/{digest}.jsonl".encode(): ("100644", good),  # another project than its folder
    }
    _publish(remote_dir, "d" * 32, files)
    _, dup_hash, _ = _session("dup")
    dup_lines = _session("dup")[2].decode().splitlines()
    _publish(remote_dir, "c" * 32, {f"p/{key}/{dup_hash}.jsonl".encode(): (
        "100644", (dup_lines[0] + "\n" + dup_lines[1] + "\n" + dup_lines[1] + "\n").encode())})
    a = Machine(tmp_path, "a")
    a.init("--remote", "file://" + str(remote_dir))
    r = a.om("sync")
    assert r.returncode == 0, r
    assert "does not hash to its file name" in r.stderr and "does not match its folder" in r.stderr
    assert "seq does not rise" in r.stderr or "repeated id" in r.stderr
    assert mirror_texts(a) == []
