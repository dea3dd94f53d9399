"""Fixtures for the end-to-end tests: the real Codex CLI, the plugin, the mock model."""

import pytest

from codex_harness import CodexHome, codex_binary, export_marketplace
from mock_model import MockModel


def pytest_collection_modifyitems(items):
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def codex_bin():
    return codex_binary()


@pytest.fixture(scope="session")
def marketplace(tmp_path_factory):
    return export_marketplace(tmp_path_factory.mktemp("marketplace"))


@pytest.fixture
def codex(codex_bin, marketplace, tmp_path):
    """`codex(script)` -> a CodexHome wired to a MockModel serving `script`."""
    models = []

    def make(script):
        model = MockModel(script).start()
        models.append(model)
        return CodexHome(codex_bin, tmp_path / f"codex{len(models)}", marketplace, model)

    yield make
    for model in models:
        model.stop()
        assert not model.errors, model.errors
