"""Shared test set-up: every test gets its own result cache, never the user's."""

import pytest


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CPSCHED_CACHE_DIR", str(tmp_path / "cpsched-cache"))
