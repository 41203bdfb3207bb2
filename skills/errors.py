"""Exceptions shared by the skill cores' packages (``dynamics``, ``climbing``)."""

from __future__ import annotations

#: How many characters of an offending value a message shows.
SHOWN_CHARS = 200


class InputValueError(ValueError):
    """A named input a core cannot use: the message shows its name, its value and why.

    The cores' own input errors (``DynamicsInputError``, ``ClimbingInputError``) derive
    from it and from their package's base.

    Attributes:
        name: which input was wrong (``"q"``, ``"footholds"``, ...).
        value: the offending value, as given.
    """

    def __init__(self, name: str, value: object, reason: str) -> None:
        shown = repr(value)
        if len(shown) > SHOWN_CHARS:
            shown = shown[: SHOWN_CHARS - 3] + "..."
        super().__init__(f"{name} = {shown}: {reason}")
        self.name = name
        self.value = value


__all__ = ["InputValueError"]
