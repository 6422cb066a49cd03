"""CITATION.cff and the changelog follow the package's version (docs/development/versions.md)."""
from __future__ import annotations

import re

import yaml

from tests.helpers import ROOT


def test_citation_and_changelog_name_the_package_version() -> None:
    found = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert found is not None
    version = found[1]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["title"] and citation["authors"]
    assert str(citation["version"]) == version, "CITATION.cff's version is not pyproject.toml's"
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## Unreleased" in changelog and f"## {version}" in changelog
