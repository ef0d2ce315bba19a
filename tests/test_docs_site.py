"""The docs site: built in strict mode (a broken link, a missing picture or a public name
without a docstring fails), then every page opened in headless Chromium, which must render
the page and load every picture.

Needs the `docs` extra and Debian's `chromium` and `chromium-driver`. Without the extra the
test skips; without Chromium it skips too, except under CI=true, where .ci/run installs it."""
import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")
webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _nav_pages():
    import yaml

    def walk(node):
        if isinstance(node, str):
            return [node] if node.endswith(".md") else []
        items = node.values() if isinstance(node, dict) else node
        return [p for item in items for p in walk(item)]
    return walk(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])


def _chromium():
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser and driver:
        return browser, driver
    if os.environ.get("CI"):
        pytest.fail("CI must test the docs site: apt-get install chromium chromium-driver")
    pytest.skip("Chromium and chromedriver are not installed")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    browser, driver = _chromium()
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                         cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))

    class Quiet(handler.func):
        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    chrome = webdriver.Chrome(service=webdriver.ChromeService(executable_path=driver),
                              options=options)
    try:
        yield out, f"http://127.0.0.1:{server.server_address[1]}", chrome
    finally:
        chrome.quit()
        server.shutdown()
        server.server_close()


def _pages(out):
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("index.html")
                  if not p.relative_to(out).parts[0] in ("assets", "search"))


IMAGES_JS = """
const imgs = Array.from(document.querySelectorAll('article img'));
return imgs.map(i => [i.getAttribute('src'), i.complete, i.naturalWidth]);
"""


def test_every_page_renders_and_every_picture_loads(site):
    out, base, chrome = site
    pages = _pages(out)
    assert len(pages) == len(_nav_pages()) >= 10, pages
    chrome.set_page_load_timeout(60)
    total = 0
    for page in pages:
        chrome.get(f"{base}/{page}")
        WebDriverWait(chrome, 60).until(
            lambda c: c.execute_script("return document.readyState") == "complete")
        title = chrome.execute_script("const h = document.querySelector('article h1');"
                                      " return h ? h.textContent : null")
        assert title and "404" not in chrome.title, page
        text = chrome.execute_script("return document.querySelector('article').innerText")
        assert len(text) > 200, f"{page} looks empty"
        images = chrome.execute_script(IMAGES_JS)
        broken = [src for src, complete, width in images if not (complete and width > 0)]
        assert not broken, f"{page}: pictures that did not load: {broken}"
        total += len(images)
    # every picture the pages' sources show: layouts, image kinds and speed plots
    assert total == sum((ROOT / "docs" / p).read_text().count("![") for p in _nav_pages()) > 20


def test_api_reference_is_generated_from_docstrings(site):
    out, base, chrome = site
    names = ("reorder.rearrange", "reorder.Desc", "reorder.Plan", "reorder.Tag",
             "reorder.plot.plot_layout", "reorder.opencl.to_image_array")
    # The built page itself: every name has its anchor, and a docstring made it through.
    html = (out / "api" / "index.html").read_text()
    missing = [n for n in names if f'id="{n}"' not in html]
    assert not missing, f"API page has no entry for {missing}"
    assert "einops pattern" in html            # rearrange's docstring made it to the page
    # The browser shows them. A loaded shared machine can hand the page's text over before
    # the last sections are laid out, so wait for it rather than read it once.
    chrome.get(f"{base}/api/")
    script = "const a = document.querySelector('article'); return a ? a.innerText : ''"
    try:
        WebDriverWait(chrome, 60, poll_frequency=0.5).until(
            lambda c: all(n.split(".")[-1] in c.execute_script(script) for n in names))
    except Exception:
        text = chrome.execute_script(script)
        pytest.fail(f"the browser's API page lacks {[n for n in names if n.split('.')[-1] not in text]};"
                    f" its text ends with {text[-200:]!r}")
