"""Headless Chromium for tests that open a page: Debian's `chromium` driven by Selenium
through Debian's `chromedriver` (./dev.sh installs all three; nothing is downloaded)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,640")


def unavailable() -> str | None:
    """Why no browser can run here, or None."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not path.exists():
            return f"{path} missing: apt-get install {package} (./dev.sh setup does)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "Python package selenium missing (./dev.sh setup installs the dev extras)"
    return None


@contextmanager
def chromium() -> Iterator:
    """A headless Chromium with a fresh profile, quit on leaving; skips where none runs."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="inart-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
