"""The root of every exception limbtree raises on purpose."""


class LimbtreeError(Exception):
    """Base of all limbtree errors: catch this to catch any of them.

    Each subpackage has its own ``errors`` module whose exceptions derive from this one and
    keep their details as attributes.
    """
