"""The typed surface: py.typed ships, the returned classes are exported, and the public
functions of the typed modules carry annotations."""
import importlib
import inspect
import typing
from importlib import resources

import numpy as np

import reorder as ro
from reorder.core import desc, tags
from reorder.front import interop
from reorder import plot
from reorder.kernels import threads

rearrange = importlib.import_module("reorder.front.rearrange")   # the package attribute is the function


def test_py_typed_ships():
    assert resources.files("reorder").joinpath("py.typed").is_file()


def test_returned_classes_are_exported():
    assert isinstance(ro.plan("nchw", "nChw16c", dims=(1, 17, 2, 2)), ro.Plan)
    assert isinstance(ro.parse_tag("nChw16c"), ro.Tag)
    assert isinstance(ro.Desc((1, 17, 2, 2), "f32", "nChw16c").tag, ro.Tag)
    assert {"Plan", "Tag", "rearrange", "RearrangeError"} <= set(ro.__all__)
    assert issubclass(ro.RearrangeError, ro.ReorderError)
    assert isinstance(ro.rearrange(np.zeros((2, 3)), "a b -> b a"), np.ndarray)


def _public_functions(module):
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    for name in names:
        obj = getattr(module, name)
        if inspect.isfunction(obj) and obj.__module__ == module.__name__:
            yield name, obj


def test_annotations_resolve():
    for module in (rearrange, interop, plot, tags, threads):
        for name, fn in _public_functions(module):
            hints = typing.get_type_hints(fn)
            assert "return" in hints, f"{module.__name__}.{name} has no return annotation"
    for name, member in vars(desc.Desc).items():
        fn = member.fget if isinstance(member, property) else member
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        assert "return" in typing.get_type_hints(fn), f"Desc.{name} has no return annotation"
