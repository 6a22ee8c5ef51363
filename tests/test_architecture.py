"""ARCHITECTURE.md names only what exists: every path it mentions, and every name it says a
module defines."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "ARCHITECTURE.md").read_text()
#: Backticked words that are paths: they hold a slash or end in a file suffix.
PATHS = sorted(
    {w for w in re.findall(r"`([^`\s]+)`", TEXT) if "/" in w or re.search(r"\.(py|md|ipynb)$", w)}
)


def test_the_document_names_many_paths():
    assert len(PATHS) > 60


def test_every_path_it_names_exists():
    missing = [p for p in PATHS if not (ROOT / p).exists()]
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


def test_every_name_it_places_in_a_module_is_defined_there():
    # "`NAME` (`path.py`)" and "`NAME` in `path.py`": the module must define NAME.
    pairs = re.findall(r"`(\w+)`(?: \(| in )`([\w/]+\.py)`", TEXT)
    assert len(pairs) >= 5
    for name, path in pairs:
        source = (ROOT / path).read_text()
        assert re.search(rf"^(class |def )?{name}\b|^\s+{name}\b.*=", source, re.M), (name, path)
