"""The independent reference of the layout spec, used by the tests and the demo: it computes
offsets from the spec's formulas and never reads `Desc`."""
