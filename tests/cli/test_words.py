"""The words a user reads say what is true: the README's checkpoint example, the errors that
follow from it, help texts, and the messages of import."""

import json
import re

import pytest

from conftest import ROOT, run_om

README = (ROOT / "README.md").read_text()


def readme_checkpoint_example():
    """The two applies of README's checkpoint example, as JSON with their placeholder ids."""
    section = README.split("A checkpoint (every array optional", 1)[1].split("\nImportance is", 1)[0]
    blocks = [b.strip() for b in re.split(r"\n\s*\n", section) if b.strip().startswith("{")]
    first, second = (json.loads(b) for b in blocks)
    return first, second


def test_the_readmes_checkpoint_example_works_as_written_once_its_ids_are_the_ones_the_runtime_returned(om):
    first, second = readme_checkpoint_example()
    sources = [om("capture", input=json.dumps({"kind": "user", "text": f"evidence {i}", "key": f"k{i}"})).json
               for i in range(3)]
    older = om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "Checkout caches in redis.", "source_ids": [sources[0]["source_id"]]}]})).json["observations"][0]
    other = om("apply", input=json.dumps({"through": 2, "observations": [
        {"text": "Checkout latency matters.", "source_ids": [sources[1]["source_id"]]}]})).json["observations"][0]
    first["observations"][0]["source_ids"] = [sources[2]["source_id"]]
    receipt = om("apply", input=json.dumps(first))
    assert receipt.returncode == 0, receipt
    (new,) = receipt.json["observations"]
    text = json.dumps(second, ensure_ascii=False).replace("o-1a2b…", new).replace("o-9f8e…", older).replace("o-…", other)
    done = om("apply", input=text)
    assert done.returncode == 0, done
    assert done.json["retired"] == [older] and len(done.json["reflections"]) == 1


def test_retiring_in_the_same_apply_that_creates_the_replacement_says_to_apply_it_first(om):
    source = om("capture", input=json.dumps({"kind": "user", "text": "x", "key": ""})).json["source_id"]
    older = om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "old fact", "source_ids": [source]}]})).json["observations"][0]
    for replacements in ([], ["o-newer"]):
        r = om("apply", input=json.dumps({"through": 1, "observations": [{"text": "new fact", "source_ids": [source]}],
                                          "retire": [{"id": older, "reason": "Superseded.",
                                                      "replacement_ids": replacements}]}))
        assert r.returncode in (65, 66) and r.stdout == "", r
        assert "an observation or reflection of this same checkpoint has no id yet: apply it first, then retire" \
               " in a second apply with the id its receipt returned" in r.stderr, r
    assert [e["text"] for e in om("view", "--all").json] == ["old fact"]  # nothing of either was applied


@pytest.mark.parametrize("command", ["status", "prime", "capture", "search"])
def test_help_names_the_options_as_the_user_types_them(command):
    r = run_om(command, "--help")
    assert r.returncode == 0
    assert "--store STORE" in r.stdout and "--session SESSION" in r.stdout
    assert "_AFTER" not in r.stdout


def test_om_self_help_offers_no_store_or_session_and_lists_uninstall():
    r = run_om("self", "--help")
    assert r.returncode == 0 and "--store" not in r.stdout and "--session" not in r.stdout
    assert "uninstall" in r.stdout


def test_capture_help_lists_the_kinds_and_says_the_key_may_be_empty():
    r = run_om("capture", "--help")
    assert r.returncode == 0
    assert "user, assistant or tool" in r.stdout and 'may be empty ("")' in r.stdout


def test_importing_from_a_store_that_does_not_exist_says_so_and_creates_nothing(om, tmp_path):
    r = om("import", "--from-store", tmp_path / "typo", "--from-session", "old")
    assert r.returncode == 66 and r.stdout == ""
    assert r.stderr == f"om: --from-store {tmp_path / 'typo'} does not exist; nothing was imported\n"
    assert not (tmp_path / "typo").exists()
