"""A store path holding URI syntax (`%`, `?`, `#`) works for every command, doctor included."""

import json

import pytest

from conftest import run_om


@pytest.mark.parametrize("name", ["a%41b", "q?x=1", "h#frag", "p%2"])
def test_a_store_path_with_uri_characters_works_for_capture_search_fork_import_and_doctor(tmp_path, name):
    store = tmp_path / name
    om = lambda *a, session="s1", **kw: run_om("--store", store, "--session", session, *a, **kw)  # noqa: E731
    r = om("capture", input=json.dumps({"kind": "user", "text": "we chose sqlite", "key": "k"}))
    assert r.returncode == 0, r
    assert om("status").json["database"].startswith(str(store) + "/")
    assert (tmp_path / name).is_dir() and not (tmp_path / "a").exists()
    assert om("search", "--sources", "sqlite").json["results"]
    assert om("fork", "--to-session", "child").returncode == 0
    assert om("import", "--from-store", store, "--from-session", "s1", session="fresh").returncode == 0
    doctor = run_om("doctor", "--json", "--store", store, env={"CODEX_HOME": str(tmp_path / "no-codex")})
    (check,) = [c for c in json.loads(doctor.stdout)["checks"] if c["check"] == "store.integrity"]
    assert check["status"] == "ok", check
