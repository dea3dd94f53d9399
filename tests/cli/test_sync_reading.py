"""Where other machines' memory shows after `om sync`: sessions, search, the project memory, export, import."""

import json

import pytest

from hook_drivers import CodexDriver
from project_support import repository
from sync_support import Machine, git, mirrors


@pytest.fixture
def machines(tmp_path, remote):
    found = []
    for name, label in (("a", "laptop"), ("b", "desktop"), ("c", "cloud")):
        m = Machine(tmp_path, name)
        m.label = label
        found.append(m)
    return found


def setup_all(machines, remote):
    for m in machines:
        m.init("--remote", remote, "--label", m.label)


def test_sessions_lists_the_mirrors_after_the_stores_own_with_each_writers_label(machines, remote):
    a, b, _ = machines
    a.capture("a1", "laptop words")
    b.capture("b1", "desktop words")
    plain = a.om("sessions", "--json").json
    assert "mirrors" not in plain
    setup_all(machines[:2], remote)
    b.sync()
    a.sync()
    doc = a.om("sessions", "--json").json
    assert [s["session"] for s in doc["sessions"]] == ["a1"]
    [mirror] = doc["mirrors"]
    assert mirror["session"] == "b1" and mirror["origin"]["label"] == "desktop" and mirror["sources"] == 1
    table = a.om("sessions").stdout
    assert "Mirrors (read-only" in table and "desktop" in table.split("Mirrors")[1]


def test_a_session_written_on_two_machines_stays_two_mirrors_and_search_shows_each_record_once(machines, remote):
    a, b, c = machines
    for m in (a, b):
        m.capture("pair", "the shared evidence about flaky tests", key="same-key")
    b.capture("pair", "only the desktop saw the retry budget")
    setup_all(machines, remote)
    for m in (a, b, c):
        m.sync()
    pair = [folder for _, folder in mirrors(c) if folder.name.startswith("session-")]
    assert len(pair) == 2
    found = c.om("search", "--all-sessions", "--sources", "flaky", "tests").json
    assert [r["id"] for r in found["results"]].count(found["results"][0]["id"]) == 1
    assert len(found["results"]) == 1 and found["mirrors"] == 2
    a.sync()
    own = a.om("search", "--all-sessions", "--sources", "flaky", "tests").json
    assert len(own["results"]) == 1 and "mirror" not in own["results"][0]
    retry = a.om("search", "--all-sessions", "--sources", "retry", "budget").json["results"]
    assert [r["mirror"]["label"] for r in retry] == ["desktop"]


class At(CodexDriver):
    """A Codex session of one machine working in a folder of our choosing."""

    def __init__(self, machine, cwd, session):
        super().__init__(machine.store)
        self.cwd, self.session, self.machine_env = str(cwd), session, machine.env

    def _base(self, event, turn):
        return dict(super()._base(event, turn), cwd=self.cwd)

    def __call__(self, payload, env=None, **kw):
        return super().__call__(payload, env=dict(self.machine_env, **(env or {})), **kw)


def _clones(tmp_path):
    origin = repository(tmp_path / "origin")
    one, two = tmp_path / "laptop-shop", tmp_path / "desktop-shop"
    git("clone", "-q", str(origin), str(one))
    git("clone", "-q", str(origin), str(two))
    return one, two


def test_project_memory_promoted_on_one_machine_is_in_the_others_prime_naming_that_machine(machines, remote,
                                                                                              tmp_path):
    a, b, _ = machines
    one, two = _clones(tmp_path)
    laptop = At(a, one, "a1")
    laptop(laptop.start())
    laptop(laptop.prompt("we decided the cache stays in sqlite"))
    pending = a.setup("--session", "a1", "pending").json
    checkpoint = {"through": pending["through"], "observations": [{
        "text": "The cache stays in SQLite; Redis was dropped.", "importance": "high",
        "source_ids": [pending["sources"][-1]["id"]], "promote": True}]}
    a.setup("--session", "a1", "apply", input=json.dumps(checkpoint))
    setup_all(machines[:2], remote)
    a.sync()
    b.sync()
    desktop = At(b, two, "b1")
    desktop(desktop.start())
    prime = b.om("--session", "b1", "prime").stdout
    assert "The cache stays in SQLite; Redis was dropped." in prime and 'on machine "laptop"' in prime
    view = b.om("project", "--project", str(two), "view").stdout
    assert "The cache stays in SQLite" in view and 'on machine "laptop"' in view
    assert a.om("--session", "a1", "prime").stdout.count("The cache stays in SQLite") == 2  # own entry, own block


def test_export_of_every_session_carries_the_mirrors_apart_from_the_stores_own(machines, remote):
    a, b, _ = machines
    a.capture("a1", "laptop words")
    b.capture("b1", "desktop words")
    setup_all(machines[:2], remote)
    b.sync()
    a.sync()
    doc = json.loads(a.om("export", "--all-sessions", "--format", "json").stdout)
    assert [s["session"] for s in doc["sessions"]] == ["a1"]
    assert [(m["session"], m["origin"]["label"]) for m in doc["mirrors"]] == [("b1", "desktop")]
    md = a.om("export", "--all-sessions", "--format", "md").stdout
    assert "Session `b1` (from machine `desktop`, read-only)" in md


def test_a_mirror_is_continued_by_importing_it_into_a_session_of_this_store(machines, remote):
    a, b, _ = machines
    b.capture("b1", "desktop started the migration")
    setup_all(machines[:2], remote)
    b.sync()
    a.sync()
    r = a.om("--session", "cont", "import", "--from-mirror", "desktop/b1")
    assert r.returncode == 0 and r.json["imported_from"]["session"] == "b1", r
    pending = a.om("--session", "cont", "pending").json
    assert [s["text"] for s in pending["sources"]] == ["desktop started the migration"]
    wrong = a.om("--session", "other", "import", "--from-mirror", "nobody/b1")
    assert wrong.returncode == 66 and len(wrong.stderr.splitlines()) == 1


def test_hooks_never_write_a_mirror_even_of_a_session_with_the_same_id(machines, remote, tmp_path):
    a, b, _ = machines
    b.capture("same", "desktop words")
    setup_all(machines[:2], remote)
    b.sync()
    a.sync()
    [(_, folder)] = mirrors(a)
    before = (folder / "memory.sqlite3").read_bytes()
    driver = At(a, tmp_path, "same")
    driver(driver.start())
    driver(driver.prompt("laptop words under the same session id"))
    assert (folder / "memory.sqlite3").read_bytes() == before
    assert a.om("--session", "same", "pending").json["sources"][-1]["text"] == "laptop words under the same session id"
