"""A report drawn with each matplotlib figure kept, for tests that inspect what was drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from limbtree.trees.report import ReportResult, make_report


def report_keeping_figures(directory: Path) -> tuple[ReportResult, dict[str, Any]]:
    """``make_report(directory)``, and each figure it saved by file name."""
    import matplotlib.figure

    figures: dict[str, Any] = {}

    class Keep(matplotlib.figure.Figure):
        def savefig(self, fname: Any, *args: Any, **kwargs: Any) -> Any:
            figures[Path(fname).name] = self
            return super().savefig(fname, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(matplotlib.figure, "Figure", Keep)
        result = make_report(directory)
    return result, figures
