"""The converter's exception: a ReorderError (so a ValueError) that names the file and tensor."""
from ..core.errors import ReorderError


class ConvertError(ReorderError):
    """A model cannot be converted: bad input file, undecidable role, rule that does not fit,
    output that exists, disk full. The message names the file and the tensor."""


class LayerError(ConvertError):
    """A layer's weights layout could not be asked of oneDNN (shapes unknown, refused). Raised
    after the model's other errors, which come first: they are usually the cause."""
