"""Drawing helpers every figure module of ``limbtree report`` shares (Agg canvas, no pyplot).

matplotlib is imported inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: Most points drawn per line; longer series are thinned by a stride (the text uses all).
MAX_POINTS: Final = 20_000

#: Colours of lines that stand for different things of one kind (skills, robots).
PALETTE: Final = (
    "#1565c0", "#ef6c00", "#2e7d32", "#c62828", "#6a1b9a",
    "#00838f", "#ad1457", "#5d4037", "#9e9d24", "#455a64",
)  # fmt: skip


def file_part(name: str) -> str:
    """``name`` made safe for a file name (anything else becomes ``_``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "limb"


def stride(count: int) -> int:
    """The stride that thins ``count`` points to at most :data:`MAX_POINTS`."""
    return max(1, math.ceil(count / MAX_POINTS))


def plain_axis(axes: Axes) -> None:
    """Tick labels in the axis's own unit: no offset or scale text that the label omits."""
    axes.ticklabel_format(axis="y", style="plain", useOffset=False)


def save(figure: Any, path: Path) -> Path:
    """Render ``figure`` on an Agg canvas into the PNG ``path``; returns ``path``.

    Raises:
        OSError: when the file cannot be written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=110)
    return path
