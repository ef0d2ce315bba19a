"""What a weight is (its role) and the logical view of the stored array that follows from it.

Logical dims follow oneDNN: convolution weights (O, I, [D,] H, W), grouped (G, O/G, I/G, ...),
fully connected weights as a matmul's B (K, N). The stored array is reshaped (never copied) to
the physical shape of the source tag over those dims.
"""
from dataclasses import dataclass

from .errors import ConvertError

ROLES = ("conv", "deconv", "fc", "bias", "vector", "matrix", "other")
_ABC = "abcdefghijkl"


@dataclass(frozen=True)
class Role:
    kind: str                 # one of ROLES
    groups: int = 1           # conv / deconv
    trans: bool = False       # fc: stored as (N, K) (ONNX Gemm transB=1)
    origin: str = ""          # where it was decided, for messages: "Conv 'c1' input W"

    def describe(self):
        extra = f", group {self.groups}" if self.groups != 1 else ""
        extra += ", transB" if self.trans else ""
        return f"{self.kind}{extra}" + (f" (from {self.origin})" if self.origin else "")


@dataclass(frozen=True)
class View:
    """The stored array seen as a layout: logical dims, the plain tag whose physical shape the
    stored array is reshaped to, and whether the weight is depthwise."""
    dims: tuple
    tag: str
    phys_shape: tuple
    depthwise: bool = False


def view(name, shape, role, where):
    """View of a stored array of `shape` with `role`; ConvertError when it does not fit."""
    shape = tuple(int(s) for s in shape)
    k = role.kind
    if k in ("conv", "deconv"):
        if not 3 <= len(shape) <= 5:
            raise ConvertError(f"{where}: tensor {name!r} of shape {list(shape)} cannot be "
                               f"{role.describe()} weights: expected 3 to 5 dims "
                               f"(O, I, [D,] [H,] W)")
        g = role.groups
        first, second, spatial = shape[0], shape[1], shape[2:]
        if g < 1 or first % g:
            raise ConvertError(f"{where}: tensor {name!r} of shape {list(shape)}: group {g} "
                               f"does not divide its first dim {first} ({role.describe()})")
        sp = _ABC[2:2 + len(spatial)] if g == 1 else _ABC[3:3 + len(spatial)]
        if k == "conv":
            if g == 1:
                return View(shape, "ab" + sp, shape)
            dims = (g, first // g, second) + spatial
            return View(dims, "abc" + sp, dims, depthwise=dims[1] == 1 and dims[2] == 1)
        # ConvTranspose stores (I, O/g, ...): oneDNN's deconvolution weights are (O, I, ...)
        if g == 1:
            return View((second, first) + spatial, "ba" + sp, shape)
        dims = (g, second, first // g) + spatial
        return View(dims, "acb" + sp, (g, first // g, second) + spatial,
                    depthwise=dims[1] == 1 and dims[2] == 1)
    if k == "fc":
        if len(shape) != 2:
            raise ConvertError(f"{where}: tensor {name!r} of shape {list(shape)} cannot be "
                               f"fully connected weights ({role.describe()}): expected 2 dims")
        if role.trans:                      # stored (N, K)
            return View((shape[1], shape[0]), "ba", shape)
        return View(shape, "ab", shape)
    if k == "bias" and len(shape) != 1:
        raise ConvertError(f"{where}: tensor {name!r} of shape {list(shape)} cannot be a bias "
                           f"({role.describe()}): expected 1 dim")
    if k not in ROLES:
        raise ConvertError(f"{where}: unknown role {k!r} for tensor {name!r}; roles: "
                           f"{', '.join(ROLES)}")
    return View(shape, _ABC[:len(shape)] if shape else "", shape)
