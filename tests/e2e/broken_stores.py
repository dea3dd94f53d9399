"""The ways a store or the plugin's data folder can be broken under a client, for either client.

Invariant: each breakage takes a harness home (CodexHome or ClaudeHome: `data_dir`, the
plugin's data folder, and `store`) and breaks it before the client's first hook runs.
"""

BREAKAGES = {
    "the plugin data folder is a regular file": lambda home: home.data_dir.write_text("not a directory"),
    "the store is a regular file": lambda home: home.store.write_text("not a directory"),
    "the remembered interpreter exits 2": lambda home: (
        home.data_dir.mkdir(parents=True),
        (home.data_dir / "fake-python").write_text(f"#!/bin/sh\necho ran >> '{home.data_dir}/fake-python.log'\n"
                                                   "echo 'cannot open file' >&2\nexit 2\n"),
        (home.data_dir / "fake-python").chmod(0o755),
        (home.data_dir / ".om-python").write_text(f"{home.data_dir / 'fake-python'}\n"),
    ),
}


def break_store(home, how):
    home.data_dir.parent.mkdir(parents=True, exist_ok=True)
    BREAKAGES[how](home)


def assert_left_as_broken(home, how):
    """Nothing was written anywhere, and what was broken is as it was."""
    assert not home.sessions(), how
    if how == "the remembered interpreter exits 2":  # the hooks did run, and their exit 2 blocked nothing
        assert len((home.data_dir / "fake-python.log").read_text().split()) >= 4, how
    else:  # the file where a folder should be is left as it was
        assert (home.store if "store" in how else home.data_dir).read_text() == "not a directory", how
