"""The built documentation site, opened in headless Chromium as a reader would open it.

Every page is loaded from a local HTTP server; a missing image, a broken link or anchor, a JavaScript
error, a resource that fails to load (a CDN, offline) or an equation MathJax left unrendered fails
the test, naming the page. The landing page and a tutorial are saved as screenshots to look at
(``SFL_SIM_DOCS_SCREENSHOTS=DIR``; CI keeps them in ``docs-screenshots/``).

Needs the docs extra (``pip install -e '.[docs]'``) and Debian's ``chromium``; skipped, saying so,
without them (the README's install has neither; ``.ci/run`` installs both). ``SFL_SIM_DOCS_SITE=DIR``
checks a site already built there (CI builds it once) instead of building one.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.browser import Browser, broken_links, check_page, chromium_path, serve
from tests.helpers import ROOT

#: The pages saved as screenshots: the landing page and one tutorial.
#: Pages that show a figure drawn by ``docs/figures/make_figures.py``.
FIGURE_PAGES = ("concepts/link-chain/", "concepts/scheduler/", "concepts/time-model/", "concepts/network-map/",
                "tutorials/ml-researcher/", "tutorials/network-researcher/")
SCREENSHOTS = {"": "landing.png", "tutorials/ml-researcher/": "tutorial-ml-researcher.png"}


def _needs() -> str | None:
    if importlib.util.find_spec("mkdocs") is None:
        return "needs the docs extra: pip install -e '.[docs]' (CI installs it)"
    if chromium_path() is None:
        return "needs a headless Chromium: apt-get install chromium, or SFL_SIM_CHROMIUM=PATH (CI installs it)"
    return None


pytestmark = pytest.mark.skipif(_needs() is not None, reason=str(_needs()))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site: ``SFL_SIM_DOCS_SITE`` if set, else built here as CI builds it."""
    if given := os.environ.get("SFL_SIM_DOCS_SITE"):
        return Path(given)
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    executable = chromium_path()
    assert executable is not None
    opened = Browser(executable, tmp_path_factory.mktemp("chromium-profile"))
    yield opened
    opened.close()


def _pages(root: Path) -> list[str]:
    """Every page of the site as a path relative to its root, as a link names it (``dir/``)."""
    return sorted(str(p.relative_to(root)).removesuffix("index.html")
                  for p in root.rglob("*.html") if p.name != "404.html")


@pytest.mark.slow
def test_every_page_shows_its_images_links_and_equations(site: Path, browser: Browser, tmp_path: Path) -> None:
    shots = Path(os.environ.get("SFL_SIM_DOCS_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with serve(site) as base:
        reports = []
        for page in _pages(site):
            reports.append(check_page(browser, base + page))
            if page in SCREENSHOTS:
                browser.screenshot(shots / SCREENSHOTS[page])
        problems = [f"{r.url}: {p}" for r in reports for p in r.problems] + broken_links(reports, site, base)
    assert not problems, "\n".join(problems)
    assert len(reports) >= 40
    shown = {r.url.removeprefix(base) for r in reports if r.images}
    for page in FIGURE_PAGES:  # the figures stay on the pages that explain them
        assert page in shown, f"{page} shows no figure"
    assert sum(r.equations for r in reports) >= 50, "the concepts' equations are gone or not rendered"
    assert all((shots / name).stat().st_size > 10_000 for name in SCREENSHOTS.values())


@pytest.mark.slow
def test_a_page_whose_image_is_removed_fails(site: Path, browser: Browser, tmp_path: Path) -> None:
    """Remove one figure from a copy of the built site: the page that shows it is reported."""
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    figures = sorted(copy.glob("figures/*.png"))
    assert figures, "the site has no generated figure (docs/figures/make_figures.py)"
    victim = figures[0]
    victim.unlink()
    pages = [p for p in _pages(copy) if victim.name in (copy / p / "index.html").read_text()]
    assert pages, victim
    with serve(copy) as base:
        report = check_page(browser, base + pages[0])
    assert any("image did not load" in p and victim.name in p for p in report.problems), report.problems


def test_the_check_names_every_kind_of_problem(browser: Browser, tmp_path: Path) -> None:
    """A page with one of each problem: every one is named (the check can fail)."""
    (tmp_path / "ok.html").write_text("<p id='here'>fine</p>")
    (tmp_path / "index.html").write_text(
        "<html><body><article>"
        "<img src='gone.png'>"
        "<a href='nowhere/'>a</a> <a href='ok.html#missing'>b</a> <a href='ok.html#here'>c</a>"
        "<p><span class='arithmatex'>\\(x^2\\)</span></p>"
        "<script>throw new Error('boom')</script>"
        "</article></body></html>")
    with serve(tmp_path) as base:
        report = check_page(browser, base)
        links = broken_links([report, check_page(browser, base + "ok.html")], tmp_path, base)
    text = "\n".join(report.problems + links)
    assert "image did not load: gone.png" in text
    assert "equation not rendered: '\\\\(x^2\\\\)'" in text
    assert "JavaScript error: Error: boom" in text
    assert "Failed to load resource: the server responded with a status of 404" in text
    assert "broken link " + base + "nowhere/" in text
    assert "broken anchor " + base + "ok.html#missing" in text
    assert "ok.html#here" not in text
