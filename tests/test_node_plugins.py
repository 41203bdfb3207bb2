"""A package adds a node type through the entry-point group limbtree.nodes, and a mission uses it.

The package in tests/plugin_nodes is installed for real (pip, into a scratch folder put on
PYTHONPATH), then limbtree runs in a subprocess that sees it, as a user's would.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
PLUGIN = HERE / "plugin_nodes"
MISSION = HERE / "missions" / "plugin_hold_still.yaml"
CLI = "import sys; from limbtree.trees.cli import main; sys.exit(main())"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A folder holding the installed plug-in package (module and dist-info)."""
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("plugin") / "plugin_nodes"  # builds leave files behind
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        + ["--no-build-isolation", "--target", str(target), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if pip.returncode != 0:
        pytest.fail(
            "pip could not build tests/plugin_nodes without build isolation; the test extras "
            "bring the setuptools it needs (pip install -e '.[test]'):\n" + pip.stderr[-2000:]
        )
    return target


def limbtree(*args, site=None, cwd=None):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run(
        [sys.executable, "-c", CLI, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


@pytest.mark.slow
def test_an_installed_package_adds_a_node_type_that_missions_check_and_run(site, tmp_path):
    listed = limbtree("nodes", "--format", "json", site=site)
    assert listed.returncode == 0, listed.stderr
    nodes = {n["name"]: n for n in json.loads(listed.stdout)["node_types"]}
    hold = nodes["hold_still"]
    assert hold["commands"] == ["limb"] and hold["kind"] == "leaf"
    assert "of package limbtree-plugin-nodes" in hold["source"]
    assert [p["key"] for p in hold["params"]] == ["limb", "duration_s"]

    checked = limbtree("check", MISSION, site=site)
    assert checked.returncode == 0, checked.stderr
    assert "OK" in checked.stdout

    tree = limbtree("tree", MISSION, "--format", "xml", site=site)
    assert tree.returncode == 0, tree.stderr
    assert '<Action ID="HoldStill" name="Hold again" limb="arm" duration_s="0.2"' in tree.stdout

    record = tmp_path / "record"
    ran = limbtree("run", MISSION, "--headless", "--record", record, site=site, cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    summary = json.loads((record / "summary.json").read_text())
    assert summary["outcome"] == "SUCCESS"
    assert summary["sim_time_s"] >= 0.5  # both holds ran their duration of mission time


@pytest.mark.slow
def test_without_the_package_the_node_type_is_unknown_to_check():
    checked = limbtree("check", MISSION)
    assert checked.returncode != 0
    assert "unknown node type hold_still" in checked.stderr


@pytest.mark.slow
def test_a_broken_plugin_is_named_with_its_entry_point_and_package(site, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for item in site.iterdir():  # the dist-info without its module: the entry point fails
        if item.name.endswith(".dist-info"):
            (broken / item.name).symlink_to(item, target_is_directory=True)
    checked = limbtree("check", MISSION, site=broken)
    assert checked.returncode != 0
    message = checked.stderr
    assert "entry point hold_still = limbtree_plugin_nodes:HOLD_STILL" in message
    assert "of package limbtree-plugin-nodes" in message
    assert "ModuleNotFoundError" in message
