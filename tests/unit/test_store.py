"""Store resolution when other processes create the same store at the same moment."""

import os
import stat

from om import store as store_module


def test_a_store_created_by_another_process_between_the_checks_is_used_not_refused(tmp_path, monkeypatch):
    target = tmp_path / "store"
    real_isdir = os.path.isdir
    calls = []

    def isdir_while_another_process_creates_it(path):
        if str(path) == str(target) and not calls:
            calls.append(path)
            os.mkdir(target, 0o700)  # the other process wins the race right after our first look
            return False
        return real_isdir(path)

    monkeypatch.setattr(store_module, "isdir", isdir_while_another_process_creates_it)
    assert store_module.resolve_store(str(target)) == str(target)
    assert calls


def test_a_store_made_by_someone_else_keeps_its_modes(tmp_path):
    target = tmp_path / "store"
    os.mkdir(target, 0o750)
    os.chmod(target, 0o750)
    store_module.resolve_store(str(target))
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o750


def test_a_file_in_place_of_the_store_is_refused(tmp_path):
    target = tmp_path / "store"
    target.write_text("")
    try:
        store_module.resolve_store(str(target))
    except store_module.StoreError as e:
        assert "not a directory" in str(e)
    else:
        raise AssertionError("a file was accepted as the store")
