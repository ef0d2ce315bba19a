"""Markers: `bigmem` tests need several GB and a minute; they run in CI (CI=true) or when
REORDER_BIGMEM=1, and are skipped otherwise."""
import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.environ.get("CI", "").lower() == "true" or os.environ.get("REORDER_BIGMEM") == "1":
        return
    skip = pytest.mark.skip(reason="bigmem: set REORDER_BIGMEM=1 (CI=true runs it)")
    for item in items:
        if "bigmem" in item.keywords:
            item.add_marker(skip)
