"""The built manual opened in headless Chromium: every page of the nav loads, shows its title
and its tables, and the nav lists every page; and the browser never leaves the machine.

The site is served on 127.0.0.1. Chromium's proxy is a trap on 127.0.0.1 that answers every
request with 502 and records it (loopback itself bypasses the proxy), so nothing the browser
asks for leaves the machine; a control image from another host proves the trap gets such
requests. A probe page holds every page in a same-origin frame and, once all have loaded,
reports what each shows and every resource it fetched (or its elements point at): all of
them must be on 127.0.0.1 (no web font, no script from a CDN).
"""

from __future__ import annotations

import contextlib
import functools
import html
import json
import re
import socketserver
import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from chromium import CHROMIUM_FLAGS, chromium
from docs_helpers import ROOT, build_site, nav_pages

CONTROL_HOST = "outside.invalid"

PROBE = """<!doctype html><html><body><pre id="probe">waiting</pre>
FRAMES
<img src="http://CONTROL/pixel.png">
<script>
// The page's load event waits for every frame (and the control image) to load.
window.addEventListener("load", () => {
  const found = {};
  for (const frame of document.querySelectorAll("iframe")) {
    const doc = frame.contentDocument;
    const h1 = doc.querySelector(".md-content h1");
    found[frame.getAttribute("src")] = {
      title: h1 ? h1.textContent.replace("\\u00b6", "").trim() : null,
      tables: doc.querySelectorAll(".md-content table").length,
      nav: Array.from(doc.querySelectorAll("nav.md-nav--primary a.md-nav__link[href]"))
        .map(a => a.getAttribute("href")),
      // what the page fetched, and what its elements would fetch
      fetched: frame.contentWindow.performance.getEntriesByType("resource").map(e => e.name)
        .concat(Array.from(doc.querySelectorAll(
          "script[src], link[href], img[src], iframe[src], source[src], video[src], audio[src]"
        )).map(e => e.src || e.href)),
    };
  }
  document.getElementById("probe").textContent = JSON.stringify(found);
});
</script></body></html>
"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


class _Trap(socketserver.BaseRequestHandler):
    """Records the first line of whatever is sent to it, answers 502."""

    seen: list[str]

    def handle(self) -> None:
        first = self.request.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
        self.server.seen.append(first)  # type: ignore[attr-defined]
        self.request.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")


@contextlib.contextmanager
def _serving(server: socketserver.BaseServer) -> Iterator[int]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]  # type: ignore[misc]
    finally:
        server.shutdown()
        server.server_close()


def _markdown_tables(page: str) -> int:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    # (a table inside a list item is indented as the item's text)
    return len(re.findall(r"^ *\|(?:---\|)+\s*$", text, re.MULTILINE))


def _generated(page: str) -> bool:
    """Whether the page is made from the code's docstrings (mkdocstrings' `:::` entries)."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return re.search(r"^::: ", text, re.MULTILINE) is not None


def _markdown_title(page: str) -> str:
    lines = (ROOT / "docs" / page).read_text(encoding="utf-8").splitlines()
    first = next(line for line in lines if line.startswith("# "))  # after a generator's comment
    return first.removeprefix("# ").replace("`", "")


@pytest.mark.docs
def test_every_page_opens_in_chromium_without_leaving_the_machine(tmp_path: Path) -> None:
    browser = chromium()
    site = tmp_path / "site"
    built = build_site(ROOT / "mkdocs.yml", site)
    assert built.returncode == 0, built.stderr[-3000:]
    pages = [page.removesuffix(".md") + ".html" for _title, page in nav_pages()]
    frames = "\n".join(f'<iframe src="{p}" width="1280" height="900"></iframe>' for p in pages)
    probe = PROBE.replace("FRAMES", frames).replace("CONTROL", CONTROL_HOST)
    (site / "probe.html").write_text(probe, encoding="utf-8")

    trap = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Trap)
    trap.seen = []  # type: ignore[attr-defined]
    pages_server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site))
    )
    with _serving(trap) as trap_port, _serving(pages_server) as port:
        done = subprocess.run(
            [
                browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                f"--proxy-server=http://127.0.0.1:{trap_port}",
                "--window-size=1366,768",
                "--dump-dom", f"http://127.0.0.1:{port}/probe.html",
            ],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    reported = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert reported is not None and reported[1] != "waiting", done.stdout[-2000:]
    found: dict[str, dict[str, Any]] = json.loads(html.unescape(reported[1]))

    for (_title, page), shown in zip(nav_pages(), pages, strict=True):
        assert found[shown]["title"] == _markdown_title(page), shown
        if _generated(page):  # its tables are the docstrings' parameters (mkdocstrings)
            assert found[shown]["tables"] > _markdown_tables(page), shown
        else:
            assert found[shown]["tables"] == _markdown_tables(page), shown
    linked = set(found["index.html"]["nav"])
    assert set(pages) - {"index.html"} <= linked, "the nav links every page"

    local = (f"http://127.0.0.1:{port}/", "data:", "blob:", "about:")
    for shown in pages:
        assert found[shown]["fetched"], shown  # its scripts and styles, at least
        outside = [url for url in found[shown]["fetched"] if not url.startswith(local)]
        assert not outside, f"{shown} fetched from outside the machine: {outside}"
    # Whatever else the browser asked for (its own update and autofill services) went to
    # the trap, as the control image did, and no further.
    seen: list[str] = trap.seen  # type: ignore[attr-defined]
    assert any(CONTROL_HOST in line for line in seen), "the trap sees a request to elsewhere"
