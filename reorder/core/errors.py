"""The library's one exception type."""


class ReorderError(ValueError):
    """A bad tag, descriptor, array or argument. The message quotes the user's own input."""


def caret(text, pos, width=1):
    """Two lines: `text` and a caret under position `pos` (used to point into tags)."""
    return f"    {text}\n    {' ' * pos}{'^' * max(width, 1)}"
