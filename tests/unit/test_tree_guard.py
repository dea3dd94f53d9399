"""The suite's guard names every path a run added to, removed from or changed in the places it watches."""

import os

from tree_guard import TreeGuard


def test_the_guard_names_what_appeared_disappeared_and_changed_and_leaves_out_what_it_skips(tmp_path):
    top = tmp_path / "top"
    (top / "kept").mkdir(parents=True)
    (top / "kept" / "same.txt").write_text("same")
    (top / "gone.txt").write_text("gone")
    (top / "edited.txt").write_text("before")
    (top / "skipped").mkdir()
    guard = TreeGuard({"the place": (str(top), {str(top / "skipped")})})
    assert guard.report() == []
    (top / "gone.txt").unlink()
    (top / "edited.txt").write_text("after, longer")
    (top / "kept" / "__pycache__").mkdir()
    (top / "kept" / "__pycache__" / "m.pyc").write_bytes(b"x")
    os.symlink("nowhere", top / "link")
    (top / "skipped" / "cache.bin").write_bytes(b"the guard does not look here")
    report = guard.report()
    assert report == [
        f"3 path(s) appeared in the place ({top}): kept/__pycache__, kept/__pycache__/m.pyc, link",
        f"1 path(s) disappeared in the place ({top}): gone.txt",
        f"1 path(s) changed in the place ({top}): edited.txt",
    ]


def test_the_guard_shows_twenty_paths_of_a_kind_and_counts_the_rest(tmp_path):
    guard = TreeGuard({"p": (str(tmp_path), set())})
    for i in range(25):
        (tmp_path / f"f{i:02d}").write_text("")
    (line,) = guard.report()
    assert line.startswith(f"25 path(s) appeared in p ({tmp_path}): f00, f01,") and line.endswith("f19 and 5 more")
