"""Screenshots of the built documentation site (issue 52): its home page and the configuration reference.

Usage: ``python scripts/docs_screenshots.py SITE_DIR --out docs/img`` after ``make docs`` (SITE_DIR:
``site``). Serves SITE_DIR on a loopback port and drives headless Chromium (``fastslow.view.browser``,
as the viewer's screenshots do); writes ``site-home.png`` and ``site-config-reference.png``.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import threading
import time
from pathlib import Path

from fastslow.view.browser import chromium_driver

PAGES = {"site-home.png": "", "site-config-reference.png": "reference/config/"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    args = parser.parse_args()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(args.site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    driver = chromium_driver(width=1400, height=1000)
    try:
        for name, path in PAGES.items():
            driver.get(f"http://127.0.0.1:{server.server_port}/{path}")
            time.sleep(1.0)  # the theme's fonts and layout settle
            args.out.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(args.out / name))
            print(args.out / name)
    finally:
        driver.quit()
        server.shutdown()


if __name__ == "__main__":
    main()
