"""Optional dependencies, imported only when a feature needs them."""
import importlib

# module -> the extra of `reorder` that installs it
_EXTRA = {"onnx": "onnx", "tqdm": "progress", "dask": "dask", "distributed": "dask",
          "yaml": "yaml", "tomli": "toml"}


def require(module, feature):
    """Import `module` or raise an ImportError that names the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = _EXTRA.get(module.split(".")[0], module)
        raise ImportError(f"{feature} needs the '{module}' package: "
                          f"pip install 'reorder[{extra}]'") from exc


def available(module):
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
