from __future__ import annotations

import importlib

import limbtree.transport


def test_every_public_name_of_transport_imports() -> None:
    module = importlib.import_module("limbtree.transport")
    missing = [name for name in limbtree.transport.__all__ if not hasattr(module, name)]
    assert missing == []


def test_transport_reexports_the_driver_contract() -> None:
    from limbtree.transport import driver

    for name in (
        "LimbDriver",
        "LimbState",
        "LimbDescription",
        "CommandMode",
        "GripperAction",
        "Health",
        "DriverError",
        "JointInfo",
    ):
        assert getattr(limbtree.transport, name) is getattr(driver, name)


def test_transport_errors_derive_from_the_limbtree_root() -> None:
    from limbtree import LimbtreeError

    for name in limbtree.transport.__all__:
        obj = getattr(limbtree.transport, name)
        if isinstance(obj, type) and issubclass(obj, Exception) and name != "DriverError":
            assert issubclass(obj, LimbtreeError), name


def test_fake_driver_helper_is_importable_from_tests() -> None:
    from fake_driver import FakeDriver

    assert FakeDriver().describe().robot == "fake_point"
