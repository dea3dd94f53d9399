"""Each fast-path shortcut in om.fastpath gives exactly what its public fallback gives.

(jsonio's scanner and encoder have their own differential test, test_jsonio_matches_json.)
"""

import hashlib
import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from om import fastpath


@settings(max_examples=500, deadline=None)
@given(st.text() | st.text(alphabet="ab '\"$`\\!*?~#&;|<>(){}[]=%+:,./-_@\n\t", max_size=12))
def test_shell_quoting_is_character_for_character_shlex_quote(word):
    assert fastpath.shell_quote(word) == shlex.quote(word)
    assert shlex.split(fastpath.shell_quote(word)) == [word]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_the_c_sha256_is_hashlibs(data):
    assert fastpath.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()


# -- paths: om.fastpath's functions over `posix` against os.path ------------------------------

import os  # noqa: E402
import posixpath  # noqa: E402

PATH_TEXT = st.text(alphabet="ab./", max_size=12) | st.text(max_size=8).map(lambda t: t.replace("\0", ""))


@settings(max_examples=500, deadline=None)
@given(PATH_TEXT, st.lists(PATH_TEXT, max_size=3))
def test_the_string_path_functions_are_os_paths(path, parts):
    assert fastpath.join(path, *parts) == posixpath.join(path, *parts)
    assert fastpath.dirname(path) == posixpath.dirname(path)
    assert fastpath.basename(path) == posixpath.basename(path)
    assert fastpath.isabs(path) == posixpath.isabs(path)
    assert fastpath.normpath(path) == posixpath.normpath(path)
    assert fastpath.abspath(path) == posixpath.abspath(path)
    assert fastpath.expanduser(path) == posixpath.expanduser(path)


# A small tree of directories, files and links (relative and absolute, through `..`,
# dangling, looping) under a fresh directory; every path below it is then resolved.
NODE = st.sampled_from(["a", "b", "c"])
LINK_TARGET = st.lists(st.sampled_from(["a", "b", "c", "..", ".", "x"]), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(NODE, min_size=1, max_size=3),
                          st.sampled_from(["dir", "file", "relative link", "absolute link"]), LINK_TARGET),
                max_size=8),
       st.lists(st.lists(st.sampled_from(["a", "b", "c", "x", ".", ".."]), min_size=1, max_size=5), max_size=6))
def test_realpath_and_the_file_tests_are_os_paths_on_any_tree_of_links(tmp_path_factory, nodes, probes):
    top = str(tmp_path_factory.mktemp("tree"))
    for names, kind, target in nodes:
        path = os.path.join(top, *names)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if kind == "dir":
                os.makedirs(path, exist_ok=True)
            elif kind == "file":
                open(path, "w").close()
            else:
                relative = "/".join(target)
                os.symlink(relative if kind == "relative link" else os.path.join(top, relative), path)
        except OSError:
            pass  # a name already taken by another kind of node, or under a file: the tree stays as it is
    for probe in [[]] + probes:
        path = os.path.join(top, *probe)
        # What the hook meets (no os loaded): the posix walk, with os.path only as its fallback.
        walked = fastpath._existing_realpath(path)
        assert walked is None or walked == os.path.realpath(path), path
        assert fastpath.realpath(path) == os.path.realpath(path)
        for name in ("exists", "lexists", "isdir", "isfile", "islink"):
            assert getattr(fastpath, name)(path) == getattr(os.path, name)(path), (name, path)


def test_getenv_reads_os_environ_as_it_is_now(monkeypatch):
    monkeypatch.setenv("OM_FASTPATH_PROBE", "héllo")
    assert fastpath.getenv("OM_FASTPATH_PROBE") == "héllo"
    monkeypatch.delenv("OM_FASTPATH_PROBE")
    assert fastpath.getenv("OM_FASTPATH_PROBE", "unset") == "unset"
