"""Names renamed in bookrag's Python API: the old one keeps working, with a DeprecationWarning naming the new one
(Python shows it to the calling code's author: in test runs, under `-W default`, and in `__main__`)."""

from __future__ import annotations

import warnings


def renamed_argument(call: str, old: str, new: str, old_value, new_value):
    """The value of `call`'s keyword argument `new`, which was called `old`: `old_value` when given under the old
    name (with a warning to use the new one), else `new_value`."""
    if old_value is None:
        return new_value
    warnings.warn(f"{call}({old}=...) is deprecated: use {new}=", DeprecationWarning, stacklevel=3)
    return old_value


class RenamedAttribute:
    """A class's old name for one of its attributes: reading or setting it reads or sets the new one, with a
    warning to use the new name. `k = RenamedAttribute("top_k")` in a class body."""

    def __init__(self, new: str):
        self.new = new

    def __set_name__(self, owner, name: str) -> None:
        self.old = f"{owner.__name__}.{name}"

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        self._warn()
        return getattr(instance, self.new)

    def __set__(self, instance, value) -> None:
        self._warn()
        setattr(instance, self.new, value)

    def _warn(self) -> None:
        warnings.warn(f"{self.old} is deprecated: use {self.new}", DeprecationWarning, stacklevel=3)
