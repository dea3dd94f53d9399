"""The HTML export in a real browser: headless Chromium, driven over the DevTools protocol.

Chromium is required (scripts/test installs Debian's package): without it these
tests fail rather than skip, so a machine that cannot run them says so.
"""

import json

import pytest

from browser import Browser, find_chromium
from conftest import run_om
from export_sample import HOSTILE, SOURCES, build
from project_support import build_project

VISIBLE = "[...document.querySelectorAll('.entry')].filter(e => !e.hidden).map(e => e.dataset.id)"


def set_filter(browser, element_id, value):
    browser.js(
        f"(() => {{ const el = document.getElementById({json.dumps(element_id)});"
        f" el.value = {json.dumps(value)}; el.dispatchEvent(new Event('input')); }})()"
    )


def click(browser, selector):
    browser.js(f"document.querySelector({json.dumps(selector)}).click()")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    if find_chromium() is None:
        pytest.fail("chromium is not installed: run scripts/test (it installs Debian's chromium as root)")
    store = tmp_path_factory.mktemp("browser") / "store"
    ids = build(store)
    path = store.parent / "memory.html"
    r = run_om("--store", store, "--session", "s1", "export", "--format", "html", "--out", path)
    assert r.returncode == 0, r
    with Browser() as browser:
        browser.open(path)
        yield browser, ids, path


@pytest.fixture
def fresh(page):
    browser, ids, path = page
    browser.open(path)  # each test starts from the page as loaded
    return browser, ids


def test_the_browser_shows_active_memory_by_importance_and_no_injected_script_ran(fresh):
    browser, ids = fresh
    assert browser.js(VISIBLE) == [ids["reflection"], ids["secrets"], ids["fixed"], ids["db"], ids["hostile"]]
    assert browser.js("document.getElementById('shown').textContent") == "5 of 6 entries"
    assert browser.js("window.__pwned === undefined")
    assert browser.js("document.scripts.length") == 2
    assert browser.js("document.querySelectorAll('img, iframe, object, embed').length") == 0
    hostile = f"#S1-{ids['hostile']} .text"
    assert browser.js(f"document.querySelector({json.dumps(hostile)}).textContent") == HOSTILE
    assert browser.js(f"document.querySelector({json.dumps(hostile)}).children.length") == 0
    retired_reason = f"#S1-{ids['symptom']} .reason"
    assert HOSTILE in browser.js(f"document.querySelector({json.dumps(retired_reason)}).textContent")


def test_the_filters_select_by_kind_importance_state_and_words(fresh):
    browser, ids = fresh
    set_filter(browser, "kind", "reflection")
    assert browser.js(VISIBLE) == [ids["reflection"]]
    set_filter(browser, "kind", "all")
    browser.js("(() => { const box = document.querySelector('input[name=imp][value=critical]');"
               " box.checked = false; box.dispatchEvent(new Event('input')); })()")
    assert ids["secrets"] not in browser.js(VISIBLE) and ids["fixed"] in browser.js(VISIBLE)
    set_filter(browser, "state", "retired")
    assert browser.js(VISIBLE) == [ids["symptom"]]
    set_filter(browser, "state", "all")
    set_filter(browser, "q", "POSTGRES atlas")
    assert browser.js(VISIBLE) == [ids["db"]]
    set_filter(browser, "q", "no such words anywhere")
    assert browser.js(VISIBLE) == []
    assert browser.js("document.getElementById('none').hidden") is False
    assert browser.js("[...document.querySelectorAll('.group')].every(g => g.hidden)")


def test_links_lead_to_cited_sources_and_along_the_replacement_chain(fresh):
    browser, ids = fresh
    db_source = ids["sources"][2]
    target = f"S1-{db_source}"
    assert browser.js(f"document.getElementById('{target}').open") is False
    assert browser.js(f"document.querySelector('#{target} pre').textContent") == ""  # collapsed, not yet filled
    click(browser, f"#S1-{ids['db']} a[href='#{target}']")
    browser.wait_for(f"document.getElementById('{target}').open")
    assert browser.js("location.hash") == f"#{target}"
    assert browser.js(f"document.querySelector('#{target} pre').textContent") == SOURCES[2][1]

    # The replacement names the retired entry it replaced; the active-only filter hid it.
    symptom = f"S1-{ids['symptom']}"
    assert browser.js(f"document.getElementById('{symptom}').hidden") is True
    click(browser, f"#S1-{ids['fixed']} a[href='#{symptom}']")
    browser.wait_for(f"!document.getElementById('{symptom}').hidden")
    assert browser.js("location.hash") == f"#{symptom}"
    assert browser.js("document.getElementById('state').value") == "all"
    # ... and the retired entry points forward to its replacement, which supports the reflection.
    fixed = f"S1-{ids['fixed']}"
    click(browser, f"#{symptom} a[href='#{fixed}']")
    browser.wait_for(f"location.hash === '#{fixed}'")
    click(browser, f"#{fixed} a[href='#S1-{ids['reflection']}']")
    browser.wait_for(f"location.hash === '#S1-{ids['reflection']}'")


def test_stored_markup_in_a_source_stays_text_when_it_is_expanded(fresh):
    browser, ids = fresh
    hostile_source, long_source = f"S1-{ids['sources'][6]}", f"S1-{ids['sources'][7]}"
    click(browser, f"#{hostile_source} summary")
    browser.wait_for(f"document.querySelector('#{hostile_source} pre').textContent.length > 0")
    assert browser.js(f"document.querySelector('#{hostile_source} pre').textContent") == HOSTILE
    assert browser.js(f"document.querySelector('#{hostile_source} pre').children.length") == 0
    assert browser.js("window.__pwned === undefined && document.scripts.length === 2")
    assert browser.js(f"!!document.querySelector('#{long_source} .pill.trunc')")
    assert not browser.js(f"!!document.querySelector('#{hostile_source} .pill.trunc')")


def test_the_store_index_lists_each_session_and_leads_to_it(tmp_path):
    store = tmp_path / "store"
    first, second = build(store, session="alpha"), build(store, session="beta")
    path = tmp_path / "store.html"
    r = run_om("--store", store, "export", "--format", "html", "--all-sessions", "--out", path)
    assert r.returncode == 0, r
    with Browser() as browser:
        browser.open(path)
        rows = browser.js("[...document.querySelectorAll('table.index tbody tr')]"
                          ".map(tr => [...tr.cells].map(td => td.textContent))")
        assert sorted(row[0] for row in rows) == ["alpha", "beta"]
        assert all(row[1] == "unknown" and row[2:6] == ["4", "1", "1", "8"] for row in rows)
        assert browser.js("document.getElementById('shown').textContent") == "10 of 12 entries"
        click(browser, "table.index tbody tr:last-child a")
        target = browser.js("location.hash")
        assert target in ("#S1", "#S2")
        name = browser.js(f"document.querySelector('{target} h2 code').textContent")
        assert name == rows[-1][0]
        # Links stay inside their own session even though both sessions hold the same ids.
        prefix = target[1:]
        ids = first if name == "alpha" else second
        click(browser, f"#{prefix}-{ids['db']} a[href='#{prefix}-{ids['sources'][2]}']")
        browser.wait_for(f"document.getElementById('{prefix}-{ids['sources'][2]}').open")
        assert browser.js("document.scripts.length") == 2 and browser.js("window.__pwned === undefined")


SOURCES_SHOWN = "[...document.querySelectorAll('.src')].filter(d => !d.hidden).map(d => d.dataset.id)"


def open_at(browser, path, fragment):
    """Load the page afresh at `path#fragment`, as following a link to it does (not a jump within it)."""
    browser.events.clear()
    browser.call("Page.navigate", url="about:blank")
    browser.wait_event("Page.loadEventFired")
    browser.open(f"{path}#{fragment}")


def test_an_id_as_recall_prints_it_lands_on_its_source_or_entry(page):
    browser, ids, path = page
    source = ids["sources"][2]
    recalled = run_om("--store", path.parent / "store", "--session", "s1", "recall", ids["db"]).json
    assert recalled["sources"][0]["id"] == source  # the id the user copies from recall
    open_at(browser, path, source)
    browser.wait_for(f"document.getElementById('S1-{source}').open")
    assert browser.js(f"document.querySelector('#S1-{source} pre').textContent") == SOURCES[2][1]
    # A retired entry's id too: the filters that hid it are reset.
    open_at(browser, path, ids["symptom"])
    browser.wait_for(f"!document.getElementById('S1-{ids['symptom']}').hidden")
    assert browser.js("document.getElementById('state').value") == "all"


def test_the_word_filter_filters_the_sources_too_and_a_cleared_filter_shows_them_all(fresh):
    browser, ids = fresh
    assert browser.js(SOURCES_SHOWN) == ids["sources"]
    set_filter(browser, "q", "POSTGRES atlas")
    # Sources match on their own text: only the log naming both words.
    assert browser.js(SOURCES_SHOWN) == [ids["sources"][2]]
    assert browser.js("document.getElementById('shown').textContent") == "1 of 6 entries, 1 of 8 sources"
    set_filter(browser, "q", "rotated")
    assert browser.js(SOURCES_SHOWN) == [ids["sources"][3], ids["sources"][4]]
    set_filter(browser, "q", "")
    assert browser.js(SOURCES_SHOWN) == ids["sources"]
    assert browser.js("document.getElementById('shown').textContent") == "5 of 6 entries"


PROJECT_SHOWN = "[...document.querySelectorAll('section.project .entry')].filter(e => !e.hidden).map(e => e.dataset.id)"


def test_the_project_section_lists_the_project_memory_with_provenance_and_its_texts_stay_text(tmp_path, monkeypatch):
    monkeypatch.setenv("OM_PROJECT_HOME", str(tmp_path / "projects"))
    project = build_project(tmp_path)
    path = tmp_path / "memory.html"
    r = run_om("--store", project["store"], "--session", "codex-1", "export", "--format", "html", "--out", path)
    assert r.returncode == 0, r
    with Browser() as browser:
        browser.open(path)
        assert browser.js("document.querySelector('section.project h2').textContent") == \
            f"Project memory {project['key']}"
        assert browser.js(PROJECT_SHOWN) == [project["hostile"], project["cache"]]
        hostile = f"#P1-{project['hostile']}"
        assert browser.js(f"document.querySelector('{hostile} .text').textContent") == HOSTILE
        assert browser.js(f"document.querySelector('{hostile} .text').children.length") == 0
        assert browser.js("window.__pwned === undefined && document.scripts.length === 2")
        provenance = browser.js(f"document.querySelector('#P1-{project['cache']} .rel').textContent")
        assert "promoted by Codex in session codex-1" in provenance
        assert "last confirmed by Claude Code in session claude-1" in provenance
        assert "promoted 2 times" in provenance
        # The page's filters reach the project entries: the retired one, with its reason kept as text.
        set_filter(browser, "state", "retired")
        assert browser.js(PROJECT_SHOWN) == [project["deploys"]]
        reason = f"#P1-{project['deploys']} .reason"
        assert browser.js(f"document.querySelector('{reason}').textContent") == "Deploys moved to CI </div>"
        set_filter(browser, "state", "all")
        set_filter(browser, "q", "sqlite")
        assert browser.js(PROJECT_SHOWN) == [project["cache"]]
