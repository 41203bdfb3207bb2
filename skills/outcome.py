"""What a skill core reports after each step."""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """A core's status; the behaviour maps it onto py_trees' ``Status``."""

    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"
