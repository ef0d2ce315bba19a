"""Markers: `bigmem` tests need several GB and a minute; they run in CI (CI=true) or when
REORDER_BIGMEM=1, and are skipped otherwise. `tile_rules` pins the planner's per-kind tile
rules (machine.TileRules) both ways; `fresh_plans` clears the plan caches around a test."""
import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.environ.get("CI", "").lower() == "true" or os.environ.get("REORDER_BIGMEM") == "1":
        return
    skip = pytest.mark.skip(reason="bigmem: set REORDER_BIGMEM=1 (CI=true runs it)")
    for item in items:
        if "bigmem" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fresh_plans():
    """The plan caches cleared before and after a test that changes what plans are made
    from (a planner constant or machine.TILE_RULES), so no plan crosses over."""
    from reorder.plan import cache
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def transpose_small_byte_planes(monkeypatch, fresh_plans):
    """Byte activations of small planes stay with the transpose kernel, as on a CPU without
    AVX-512 VBMI, for the tests of its tiles."""
    from reorder.kernels import move
    monkeypatch.setattr(move, "ACTIVATION_BLOCK_COLUMNS",
                        dict.fromkeys(move.ACTIVATION_BLOCK_COLUMNS, 0))


@pytest.fixture
def transpose_few_columns(monkeypatch, fresh_plans):
    """Rows of a few elements against planes (nhwc <-> nchw at 2-15 channels, or planes of
    2-15 pixels) stay with the transpose kernel, and their conversions with the conversion
    tiles, as on a CPU without AVX-512, for the tests of those tiles."""
    from reorder.kernels import move
    monkeypatch.setattr(move, "INTERLEAVE_MAX_CHANNELS",
                        dict.fromkeys(move.INTERLEAVE_MAX_CHANNELS, 0))
    monkeypatch.setattr(move, "INTERLEAVE_STREAMED_MAX_CHANNELS", 0)


@pytest.fixture(params=[True, False], ids=["xeon-tile-rules", "zen-tile-rules"])
def tile_rules(request, monkeypatch, fresh_plans):
    """machine.TILE_RULES pinned to the rules of the kind they were measured on (True) or of
    the others (False), whatever this CPU is, with the plan caches cleared around it
    (fresh_plans). Its value is the TileRules."""
    from reorder.core import machine
    rules = machine.TileRules(copy_out_rows=request.param, slice_widening_planes=request.param)
    monkeypatch.setattr(machine, "TILE_RULES", rules)
    return rules
