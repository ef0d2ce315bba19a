"""Markers (registered in pyproject.toml): `slow` tests take long (soak, property and fuzz-like
searches, model-scale runs, big memory), `docs` tests build or run the docs; both run with
the suite, and `pytest -m "not slow"` leaves the slow ones out for a quick loop. `bigmem`
tests need several GB and a minute; they run in CI (CI=true) or when REORDER_BIGMEM=1, and
are skipped otherwise.

REORDER_TEST_INSTALLED=1 says the suite is meant for an installed reorder (a wheel in a
venv): the run stops at once if `reorder` would be imported from anywhere but that
interpreter's site-packages, such as a source tree on sys.path.

Fixtures: `tile_rules` pins the planner's per-kind tile rules (machine.TileRules) both ways;
`fresh_plans` clears the plan caches around a test."""
import os
import sysconfig
from pathlib import Path

import pytest


def pytest_configure(config):
    if os.environ.get("REORDER_TEST_INSTALLED") != "1":
        return
    import reorder
    where = Path(reorder.__file__).resolve()
    sites = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    if not any(where.is_relative_to(site) for site in sites):
        raise pytest.UsageError(f"REORDER_TEST_INSTALLED=1 but reorder is imported from {where}, "
                                f"not from site-packages ({', '.join(map(str, sorted(sites)))})")


def pytest_report_header(config):
    try:
        import reorder
    except ImportError as e:            # the tests that need it say so, one by one
        return f"reorder: not importable ({e})"
    return f"reorder {reorder.__version__} from {Path(reorder.__file__).resolve().parent}"


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
