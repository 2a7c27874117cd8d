"""Screenshots of `fastslow view` for docs/img and the README, taken in headless Chromium.

    python scripts/viewer_screenshots.py --out docs/img RUN_A RUN_B [RUN ...]

RUN_A and RUN_B are compared (the first episode whose outcome differs between them); every run is on
the runs page. Each view is opened as a user would (filters, expanded events) and saved as PNG.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from fastslow.view.browser import chromium_driver, click, wait_for
from fastslow.view.server import serve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    server = serve(args.runs)
    driver = chromium_driver(1400, 1000)
    try:

        def shot(name: str) -> None:
            time.sleep(0.3)
            driver.save_screenshot(str(args.out / f"viewer-{name}.png"))
            print(args.out / f"viewer-{name}.png")

        driver.get(server.url)
        wait_for(driver, f"#run-{len(args.runs) - 1}")
        shot("runs")

        driver.get(server.url + "#/run/1/episodes")
        Select(wait_for(driver, "#f-outcome")).select_by_value("failure")
        time.sleep(0.5)
        Select(wait_for(driver, "#f-mechanism")).select_by_value("gate_drop")
        time.sleep(0.5)
        shot("episodes")

        driver.get(server.url + "#/diff/0/1")
        row = wait_for(driver, "#diff tbody tr")
        shot("diff")
        episode = row.find_element(By.TAG_NAME, "a").text
        click(driver, row.find_element(By.TAG_NAME, "a"))
        wait_for(driver, "#first-divergence")
        shot("compare")

        driver.get(server.url + f"#/run/1/episode/{episode}")
        wait_for(driver, "#timeline tr.step")
        for css in ("details.ev-gate_decision.drop", "details.ev-memory_retrieval", "details.ev-critic_call"):
            found = driver.find_elements(By.CSS_SELECTOR, css)
            if found:
                click(driver, found[0].find_element(By.TAG_NAME, "summary"))
        driver.execute_script("window.scrollTo(0, 0)")
        shot("episode")
        first = driver.find_elements(By.CSS_SELECTOR, "details.ev-gate_decision.drop, details.ev-critic_call")
        if first:
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", first[0])
            shot("episode-events")

        # an LLM run's model call, expanded (the last run given, when it has one)
        last = len(args.runs) - 1
        for entry in server.runs[last].episodes():
            if entry["mechanisms"].get("sage"):
                driver.get(server.url + f"#/run/{last}/episode/{entry['id']}")
                call = wait_for(driver, "details.ev-model_call")
                click(driver, call.find_element(By.TAG_NAME, "summary"))
                driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", call)
                driver.execute_script("window.scrollBy(0, -60)")
                shot("model-call")
                break
    finally:
        driver.quit()
        server.shutdown()


if __name__ == "__main__":
    main()
