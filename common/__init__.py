"""limbtree: behaviour-tree missions for modular, multi-limbed space robots.

The subpackages follow the one-way arrows of DESIGN.md: ``kinematics`` <- ``skills`` <-
``trees``, and ``transport`` <- ``robots``. This root package holds only what every layer
shares: the version, the root exception, and (``limbtree.yaml11``) the refusal of YAML 1.1
numbers in other bases than 10, which mission files and robot descriptions both apply.
"""

from limbtree.errors import LimbtreeError


def __getattr__(name: str) -> str:
    """``__version__``, read from the installed package's metadata when first asked for.

    (Not at import: importing ``importlib.metadata`` takes time every command would pay.)
    """
    if name != "__version__":
        raise AttributeError(f"module 'limbtree' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("limbtree")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
        return "0+unknown"


__all__ = ["LimbtreeError", "__version__"]
