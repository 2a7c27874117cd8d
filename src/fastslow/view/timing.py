"""``fastslow bench view RUN [RUN ...]``: how long the viewer takes in real headless Chromium (the target:
over the fast-pathway 2x2, 4 x 271 episodes, the first episode shows in under 2 s; README.md gives a
measurement). Printed, never asserted."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fastslow.view.browser import chromium_driver, wait_for
from fastslow.view.server import serve


def bench_view(paths: list[Path]) -> dict[str, Any]:
    """Seconds from a cold start (server up, nothing read from the logs yet) to: the runs page with
    every run's tables; the first run's episode list; its first episode's timeline; and the comparison
    of that episode across all runs. Each step is a page navigation of its own, as a user clicks."""
    t0 = time.perf_counter()
    server = serve(paths, 0)
    started = time.perf_counter() - t0
    driver = chromium_driver()
    try:
        timings: dict[str, Any] = {"runs": len(paths), "server_start_s": round(started, 3)}
        t = time.perf_counter()
        driver.get(server.url)
        wait_for(driver, f"#run-{len(paths) - 1}")
        timings["runs_page_s"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        driver.get(server.url + "#/run/0/episodes")
        first = wait_for(driver, "#episodes tr.ep", timeout=120)
        timings["episode_list_s"] = round(time.perf_counter() - t, 3)
        episode_id = first.get_attribute("data-id")
        timings["episodes_listed"] = len(server.runs[0].episodes())
        t = time.perf_counter()
        first.click()
        wait_for(driver, "#timeline tr.step")
        timings["first_episode_s"] = round(time.perf_counter() - t, 3)
        timings["to_first_episode_s"] = round(
            timings["runs_page_s"] + timings["episode_list_s"] + timings["first_episode_s"], 3
        )
        t = time.perf_counter()
        which = ",".join(str(i) for i in range(len(paths)))
        driver.get(f"{server.url}#/compare/{episode_id}?runs={which}")
        wait_for(driver, "#compare, #no-divergence")
        timings["compare_s"] = round(time.perf_counter() - t, 3)
        timings["episode"] = episode_id
        return timings
    finally:
        driver.quit()
        server.shutdown()
