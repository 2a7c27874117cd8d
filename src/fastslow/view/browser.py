"""Real headless Chromium for the viewer's browser test and ``fastslow bench view`` (Debian ``chromium`` +
``chromium-driver``, Selenium from the ``dev`` extra). Nothing is downloaded: Selenium's own driver
manager is bypassed by naming the installed chromedriver."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import Any

from fastslow.errors import UsageError


def chromium_driver(width: int = 1400, height: int = 1000) -> Any:
    """A headless Chromium WebDriver; ``UsageError`` (one line) when Selenium or the browser is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        raise UsageError("selenium is not installed (pip install -e '.[dev]')") from exc
    driver = shutil.which("chromedriver")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if driver is None or browser is None:
        raise UsageError("Chromium or its driver is missing (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--window-size={width},{height}",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(driver), options=options)


def wait_for(driver: Any, css: str, timeout: float = 20.0) -> Any:
    """The first element matching ``css`` once it exists (polling; ``TimeoutError`` after ``timeout``)."""
    return wait_until(lambda: _first(driver, css), timeout, f"no element {css!r}")


def wait_until(probe: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {timeout:.0f} s")
        time.sleep(0.02)


def _first(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.CSS_SELECTOR, css)
    return found[0] if found else None


def click(driver: Any, element: Any) -> None:
    """Click ``element`` as a user would, after scrolling it to the middle of the window (the viewer's
    header is sticky and would take a click on an element scrolled to the very top)."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def open_view(driver: Any, url: str, timeout: float = 30.0) -> None:
    """Go to a viewer URL and wait until the page has rendered that view (the page marks the route it
    shows on ``#app``), so no element of the previous view is taken for one of this view."""
    driver.get(url)
    route = "#" + url.split("#", 1)[1] if "#" in url else "#/"
    wait_until(
        lambda: driver.execute_script("return document.getElementById('app').dataset.route") == route,
        timeout,
        f"the view {route}",
    )
