"""limbtree: behaviour-tree missions for modular, multi-limbed space robots.

The subpackages follow the one-way arrows of DESIGN.md: ``kinematics`` <- ``skills`` <-
``trees``, and ``transport`` <- ``robots``. This root package holds only what every layer
shares: the version, the root exception, and (``limbtree.yaml11``) the refusal of YAML 1.1
numbers in other bases than 10, which mission files and robot descriptions both apply.
"""

from importlib.metadata import PackageNotFoundError, version

from limbtree.errors import LimbtreeError

try:
    __version__ = version("limbtree")
except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
    __version__ = "0+unknown"

__all__ = ["LimbtreeError", "__version__"]
