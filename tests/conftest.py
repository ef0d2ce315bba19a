"""Markers: `bigmem` tests need several GB and a minute; they run in CI (CI=true) or when
REORDER_BIGMEM=1, and are skipped otherwise. `tile_rules` pins the planner's per-kind tile
rules (machine.TileRules) both ways."""
import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.environ.get("CI", "").lower() == "true" or os.environ.get("REORDER_BIGMEM") == "1":
        return
    skip = pytest.mark.skip(reason="bigmem: set REORDER_BIGMEM=1 (CI=true runs it)")
    for item in items:
        if "bigmem" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(params=[True, False], ids=["xeon-tile-rules", "zen-tile-rules"])
def tile_rules(request, monkeypatch):
    """machine.TILE_RULES pinned to the rules of the kind they were measured on (True) or of
    the others (False), whatever this CPU is, with the plan caches cleared around it so no
    plan of the other rules is reused. Its value is the TileRules."""
    from reorder import machine, plan_cache, plans
    rules = machine.TileRules(copy_out_rows=request.param, slice_widening_planes=request.param)
    monkeypatch.setattr(machine, "TILE_RULES", rules)
    plan_cache.cached_plan.cache_clear()
    plans._steps.cache_clear()
    yield rules
    plan_cache.cached_plan.cache_clear()
    plans._steps.cache_clear()
