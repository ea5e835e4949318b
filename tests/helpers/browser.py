"""Headless Chromium for the HTML report tests: find it, render a page (DOM after scripts,
screenshot). Tests never install it: .ci/run installs Debian's ``chromium`` before the test
command; elsewhere the browser tests say what they need (``apt-get install chromium``).

Chromium's background services (component updates, sync, QUIC, first-run checks) try to reach
the network at start-up; the flags below switch them off, so a page that asks for nothing from
the network causes no request at all (``--enable-logging`` then shows none).
"""
from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import zlib
from html.parser import HTMLParser
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio")
RENDER_TIMEOUT_S = 90
# Chromium's own services (network time, sign-in, updates) still call home now and then
# despite the flags; those requests are the browser's, not the page's
BROWSER_HOSTS = ("google.com", "googleapis.com", "gstatic.com", "gvt1.com", "gvt2.com",
                 "googleusercontent.com", "chromium.org")


def page_requests(urls: list[str]) -> list[str]:
    """The requests a page made: everything but local files and the browser's own services."""
    from urllib.parse import urlsplit
    out = []
    for url in urls:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.scheme in ("file", "data", "about", "chrome", "blob"):
            continue
        if any(host == h or host.endswith("." + h) for h in BROWSER_HOSTS):
            continue
        out.append(url)
    return out


def which() -> str | None:
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


class Browser:
    """One Chromium executable; every call gets a fresh profile directory."""

    def __init__(self, path: str):
        self.path = path

    def _run(self, *args: str, log: bool = False) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory(prefix="mg-chromium-") as profile:
            extra = ["--enable-logging=stderr", "--v=1"] if log else []
            return subprocess.run([self.path, *FLAGS, f"--user-data-dir={profile}", *extra,
                                   *args], capture_output=True, text=True,
                                  timeout=RENDER_TIMEOUT_S, stdin=subprocess.DEVNULL)

    def load(self, page: Path) -> tuple[str, list[str]]:
        """(the page's DOM after its scripts ran, every URL the browser was about to request
        while loading it): ``--dump-dom`` with the network stack's verbose log, whose
        ``NotifyBeforeURLRequest`` lines name each request before it is made."""
        return _dom_and_urls(self._run("--dump-dom", page.resolve().as_uri(), log=True))

    def dump_dom(self, page: Path) -> str:
        return self.load(page)[0]

    def screenshot(self, page: Path, png: Path, size: str = "1400,1000") -> Path:
        done = self._run(f"--screenshot={png}", f"--window-size={size}", page.resolve().as_uri())
        return _screenshot(done, png)

    def render(self, page: Path, png: Path, size: str = "1400,1000"
               ) -> tuple[str, list[str], Path]:
        """``load`` and ``screenshot`` from one start of Chromium (most of either's time is
        the browser starting): (DOM, URLs requested, the screenshot)."""
        done = self._run("--dump-dom", f"--screenshot={png}", f"--window-size={size}",
                         page.resolve().as_uri(), log=True)
        return (*_dom_and_urls(done), _screenshot(done, png))

    def print_pdf(self, page: Path, pdf: Path) -> Path:
        """The page as printed (the print stylesheet applies)."""
        done = self._run(f"--print-to-pdf={pdf}", "--no-pdf-header-footer",
                         page.resolve().as_uri())
        if done.returncode or not pdf.exists():
            raise RuntimeError(f"chromium --print-to-pdf failed ({done.returncode}): "
                               f"{done.stderr[-2000:]}")
        return pdf


def _dom_and_urls(done: subprocess.CompletedProcess) -> tuple[str, list[str]]:
    if done.returncode or "<html" not in done.stdout:
        raise RuntimeError(f"chromium --dump-dom failed ({done.returncode}): "
                           f"{done.stderr[-2000:]}")
    urls = [line.split("NotifyBeforeURLRequest: ", 1)[1].strip()
            for line in done.stderr.splitlines() if "NotifyBeforeURLRequest: " in line]
    return done.stdout, urls


def _screenshot(done: subprocess.CompletedProcess, png: Path) -> Path:
    if done.returncode or not png.exists() or png.stat().st_size < 1000:
        raise RuntimeError(f"chromium --screenshot failed ({done.returncode}): "
                           f"{done.stderr[-2000:]}")
    return png


class Element:
    """One element of a parsed page: tag, attributes, text directly inside, ancestors."""

    def __init__(self, tag: str, attrs: dict, parents: tuple["Element", ...]):
        self.tag, self.attrs, self.parents, self.text = tag, attrs, parents, ""

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def inside(self, tag: str, cls: str | None = None, **attrs: str) -> "Element | None":
        """The nearest ancestor with this tag (and class, and attribute values), if any."""
        for p in reversed(self.parents):
            if p.tag == tag and (cls is None or cls in p.classes) and \
                    all(p.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                return p
        return None


class _Collector(HTMLParser):
    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[Element] = []
        self.all: list[Element] = []

    def handle_starttag(self, tag, attrs):
        el = Element(tag, dict(attrs), tuple(self.stack))
        self.all.append(el)
        if tag not in self.VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag, attrs):
        self.all.append(Element(tag, dict(attrs), tuple(self.stack)))

    def handle_endtag(self, tag):
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k].tag == tag:
                del self.stack[k:]
                break

    def handle_data(self, data):
        if self.stack:
            self.stack[-1].text += data


def parse(page: str) -> list[Element]:
    """Every element of an HTML document (as Chromium dumped it, or as written)."""
    c = _Collector()
    c.feed(page)
    return c.all


def find(elements: list[Element], tag: str, cls: str | None = None, **attrs: str) -> list[Element]:
    return [e for e in elements if e.tag == tag and (cls is None or cls in e.classes)
            and all(e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]


def png_size(png: Path) -> tuple[int, int]:
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def png_colours(png: Path) -> int:
    """How many distinct byte values the decompressed image data holds: a blank page has a
    handful, a page of charts well over a hundred."""
    data, pos, idat = png.read_bytes(), 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    return len(set(zlib.decompress(idat)))
