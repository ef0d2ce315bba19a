"""Rules files: tensor-name globs -> role, source tag, destination tag, dtype, quantization.

    [[rule]]
    match = "layer*.conv*.weight"   # fnmatch glob on the tensor name; the first match wins
    role = "conv"                   # conv | deconv | fc | bias | vector | matrix | other
    groups = 1                      # conv / deconv
    trans = false                   # fc stored as (N, K)
    src = "oihw"                    # tag of the stored array (default: the role's own)
    dst = "AcdB64a4b"               # destination tag; wins over the preset
    dtype = "f16"                   # destination type
    quantize = "s8"                 # "s8" or "none"
    compensation = "s8s8"           # "s8s8", "zp", "s8s8+zp" or "none"
    scale_adjust = 0.5

TOML needs Python 3.11 (tomllib) or the `tomli` package; YAML (the same keys, a list under
`rule:`) needs PyYAML.
"""
import fnmatch
import os
from dataclasses import dataclass, fields

from ._extras import require
from .errors import ConvertError
from .roles import ROLES, Role


@dataclass(frozen=True)
class Rule:
    match: str
    role: str = None
    groups: int = None
    trans: bool = None
    src: str = None
    dst: str = None
    dtype: str = None
    quantize: str = None
    compensation: str = None
    scale_adjust: float = None
    where: str = ""

    def role_for(self, found):
        """The Role this rule gives, starting from the one the file decided (if any)."""
        if self.role is None and self.groups is None and self.trans is None:
            if self.src is not None and found is not None and found.kind == "undecided":
                return Role("other", origin=self.where)     # the rule's src tag decides
            return found
        base = found if found is not None and found.kind != "undecided" else Role("other")
        return Role(self.role or base.kind,
                    groups=self.groups if self.groups is not None else base.groups,
                    trans=self.trans if self.trans is not None else base.trans,
                    origin=self.where)


_TYPES = {"match": str, "role": str, "groups": int, "trans": bool, "src": str, "dst": str,
          "dtype": str, "quantize": str, "compensation": str, "scale_adjust": (int, float)}


def _rule(entry, where):
    if not isinstance(entry, dict):
        raise ConvertError(f"{where}: a rule must be a table of keys, got {entry!r}")
    known = {f.name for f in fields(Rule)} - {"where"}
    for key, value in entry.items():
        if key not in known:
            raise ConvertError(f"{where}: unknown key {key!r}; keys: {', '.join(sorted(known))}")
        if not isinstance(value, _TYPES[key]) or (key == "groups" and isinstance(value, bool)):
            raise ConvertError(f"{where}: {key} = {value!r} has the wrong type")
    if "match" not in entry:
        raise ConvertError(f"{where}: a rule needs match = \"<tensor-name glob>\"")
    if entry.get("role") is not None and entry["role"] not in ROLES:
        raise ConvertError(f"{where}: role {entry['role']!r} is not one of {', '.join(ROLES)}")
    if entry.get("quantize") not in (None, "s8", "none"):
        raise ConvertError(f"{where}: quantize must be \"s8\" or \"none\", got {entry['quantize']!r}")
    if entry.get("compensation") not in (None, "s8s8", "zp", "s8s8+zp", "none"):
        raise ConvertError(f"{where}: compensation must be s8s8, zp, s8s8+zp or none, got "
                           f"{entry['compensation']!r}")
    if entry.get("groups") is not None and entry["groups"] < 1:
        raise ConvertError(f"{where}: groups must be >= 1")
    return Rule(where=where, **entry)


class Rules:
    def __init__(self, rules=(), source="rules"):
        self.rules = tuple(rules)
        self.source = source

    def find(self, name):
        for r in self.rules:
            if fnmatch.fnmatchcase(name, r.match):
                return r
        return None

    def __len__(self):
        return len(self.rules)


def load_rules(spec):
    """Rules from None, a path (.toml, .yaml, .yml), a dict {"rule": [...]} or a list of
    dicts."""
    if spec is None:
        return Rules()
    if isinstance(spec, Rules):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        path = os.fspath(spec)
        data = _read(path)
        source = path
    else:
        data, source = spec, "rules"
    if isinstance(data, dict):
        unknown = set(data) - {"rule"}
        if unknown:
            raise ConvertError(f"{source}: unknown top-level key(s) {sorted(unknown)}; rules go "
                               f"in [[rule]] tables")
        data = data.get("rule", [])
    if not isinstance(data, (list, tuple)):
        raise ConvertError(f"{source}: expected a list of rules")
    return Rules([_rule(e, f"{source}: rule {i + 1}") for i, e in enumerate(data)], source)


def _read(path):
    ext = os.path.splitext(path)[1].lower()
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ConvertError(f"cannot read rules file {path}: {exc.strerror or exc}") from None
    if ext == ".toml":
        try:
            import tomllib as toml
        except ImportError:
            toml = require("tomli", "a TOML rules file on Python 3.10")
        try:
            return toml.loads(raw.decode("utf-8"))
        except (toml.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConvertError(f"{path}: not valid TOML ({exc})") from None
    if ext in (".yaml", ".yml"):
        yaml = require("yaml", "a YAML rules file")
        try:
            return yaml.safe_load(raw) or {}
        except yaml.YAMLError as exc:
            raise ConvertError(f"{path}: not valid YAML ({exc})") from None
    raise ConvertError(f"{path}: a rules file is .toml, .yaml or .yml")
