"""The README and docs/ name only files that exist (issue 12, item 11).

Two kinds of reference are checked: markdown links ``[text](target)`` (relative to the
document), and repository paths written in the text or in examples (``docs/record.md``,
``missions/square_sync.yaml``: anything under one of the repository's folders, relative to
its root).
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
#: ``[text](target)``, not an image.
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FOLDERS = ("docs", "missions", "tests", "benchmarks", "trees", "skills", "kinematics",
           "transport", "robots", "common", ".ci")  # fmt: skip
#: A path under one of the repository's folders, ending in a file name with an extension.
PATH = re.compile(
    r"(?<![\w./-])((?:"
    + "|".join(re.escape(f) for f in FOLDERS)
    + r")/[\w./-]*\w\.(?:md|py|yaml|toml|json|sh|txt))\b"
)


def local_links(document: Path) -> list[str]:
    """The targets of the document's markdown links that point into the repository."""
    targets = LINK.findall(document.read_text())
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def repository_paths(document: Path) -> list[str]:
    """The repository paths the document names."""
    return sorted(set(PATH.findall(document.read_text())))


@pytest.mark.parametrize("document", DOCS, ids=lambda p: p.name)
def test_every_link_and_repository_path_names_a_file_that_exists(document):
    missing = [
        target
        for target in local_links(document)
        if not (document.parent / target.split("#", 1)[0]).exists()
    ]
    missing += [path for path in repository_paths(document) if not (ROOT / path).exists()]
    assert not missing, f"{document.name} names files that do not exist: {missing}"


def test_the_finders_see_paths_and_links_and_skip_urls_and_anchors(tmp_path):
    sample = tmp_path / "sample.md"
    sample.write_text(
        "See `docs/record.md`, [the robots](robots.md) and [web](https://x.org/a.md), "
        "[up](#top); run `limbtree run missions/square_sync.yaml` or my_mission.yaml.\n"
    )
    assert local_links(sample) == ["robots.md"]
    assert repository_paths(sample) == ["docs/record.md", "missions/square_sync.yaml"]
