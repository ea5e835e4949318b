"""Headless Chromium for the HTML report tests: find it, install it where the machine allows,
render a page (DOM after scripts, screenshot), and say clearly why not where it cannot.

Chromium's background services (component updates, sync, QUIC, first-run checks) try to reach
the network at start-up; the flags below switch them off, so a page that asks for nothing from
the network causes no request at all (``--enable-logging`` then shows none).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio")
INSTALL_TIMEOUT_S = 600
RENDER_TIMEOUT_S = 90


def find() -> str | None:
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


def install() -> tuple[str | None, str]:
    """(path, "") after installing Debian's ``chromium``, or (None, why not)."""
    if os.geteuid() != 0:
        return None, "not root, so Debian's chromium package cannot be installed"
    if not shutil.which("apt-get"):
        return None, "no apt-get on this machine to install Debian's chromium package"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
        try:
            done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  timeout=INSTALL_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None, f"`{' '.join(cmd)}` took over {INSTALL_TIMEOUT_S} s"
        if done.returncode:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
            return None, f"`{' '.join(cmd)}` failed: {tail[0]}"
    path = find()
    return (path, "") if path else (None, "apt-get installed chromium but it is not on PATH")


class Browser:
    """One Chromium executable; every call gets a fresh profile directory."""

    def __init__(self, path: str):
        self.path = path

    def _run(self, *args: str, log: Path | None = None) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory(prefix="mg-chromium-") as profile:
            extra = ["--enable-logging=stderr", "--v=1"] if log else []
            done = subprocess.run([self.path, *FLAGS, f"--user-data-dir={profile}", *extra,
                                   *args], capture_output=True, text=True,
                                  timeout=RENDER_TIMEOUT_S, stdin=subprocess.DEVNULL)
        if log:
            log.write_text(done.stderr)
        return done

    def dump_dom(self, page: Path, log: Path | None = None) -> str:
        """The page's DOM after its scripts ran (``--dump-dom``)."""
        done = self._run("--dump-dom", page.resolve().as_uri(), log=log)
        if done.returncode or "<html" not in done.stdout:
            raise RuntimeError(f"chromium --dump-dom failed ({done.returncode}): "
                               f"{done.stderr[-2000:]}")
        return done.stdout

    def screenshot(self, page: Path, png: Path, size: str = "1400,1000") -> Path:
        done = self._run(f"--screenshot={png}", f"--window-size={size}", page.resolve().as_uri())
        if done.returncode or not png.exists() or png.stat().st_size < 1000:
            raise RuntimeError(f"chromium --screenshot failed ({done.returncode}): "
                               f"{done.stderr[-2000:]}")
        return png

    def print_pdf(self, page: Path, pdf: Path) -> Path:
        """The page as printed (the print stylesheet applies)."""
        done = self._run(f"--print-to-pdf={pdf}", "--no-pdf-header-footer",
                         page.resolve().as_uri())
        if done.returncode or not pdf.exists():
            raise RuntimeError(f"chromium --print-to-pdf failed ({done.returncode}): "
                               f"{done.stderr[-2000:]}")
        return pdf
