"""The viewer shows memory use (issue 51 part 3): at a step where AMM's action prior changed Swift's top
(``memory_prior``) or a retrieval returned records (``memory_retrieval``), the records it read (their
tags, actions, observations, from the run's SQLite store) and the episodes that wrote them, linked when
they are episodes of the same run.

Real TextWorldExpress JVMs and a real SQLite store, no mocks: twx-swift-amm (the prior on) plays the
first 4 twc dev seeds as a stream; the JSON answer of ``fastslow view``'s server is checked against the
logs and the store, then the page in headless Chromium: the prior's event expanded shows its records
and a link to an endorsing episode, which opens that episode.
"""

from __future__ import annotations

import http.client
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fastslow.cli import main
from fastslow.view.browser import click, open_view, wait_for, wait_until
from fastslow.view.server import ViewerServer, serve


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view-memory") / "run"
    games = ["--set", "dev", "--tasks", "twc", "--limit-per-task", "4"]
    main(["eval", "--config", "twx-swift-amm", *games, "--stream", "--workers", "1", "--out", str(out)])
    return out


@pytest.fixture(scope="module")
def server(run: Path) -> Iterator[ViewerServer]:
    s = serve([run])
    yield s
    s.shutdown()


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _prior_episode(run: Path) -> tuple[str, dict[str, Any]]:
    """The first episode (by id) with a prior change that names an endorsing episode, and that change."""
    for log in sorted((run / "events").glob("*.jsonl")):
        for e in _events(log):
            if e["event"] == "memory_prior" and e["endorsed_by"]:
                return log.stem, e
    raise AssertionError("no memory_prior event with an endorser in the run")


def _get(server: ViewerServer, path: str) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{server.port}"})
        answer = conn.getresponse()
        assert answer.status == 200
        return json.loads(answer.read())
    finally:
        conn.close()


def test_the_episode_answer_carries_the_records_and_their_writers(run: Path, server: ViewerServer) -> None:
    episode, change = _prior_episode(run)
    data = _get(server, f"/api/runs/0/episodes/{episode}")
    with sqlite3.connect(f"file:{run / 'memory.sqlite'}?mode=ro", uri=True) as db:
        stored = {rid: json.loads(text) for rid, text in db.execute("SELECT id, data FROM memories")}
    # every record the prior's changes and the retrievals read, looked up in the store
    used = [
        rid
        for e in _events(run / "events" / f"{episode}.jsonl")
        if e["event"] in ("memory_prior", "memory_retrieval")
        for rid in e.get("ids", e.get("records", []))
    ]
    assert set(change["records"]) <= set(data["records"]) == set(used)
    for rid in used:
        assert data["records"][rid]["action"] == stored[rid]["action"]
    # the endorsers are this run's episodes: named, with their logs served
    assert set(change["endorsed_by"]) <= set(data["writers"])
    for name in data["writers"]:
        assert (run / "events" / f"{name}.jsonl").is_file()
    listed = {e["id"]: e for e in _get(server, "/api/runs/0/episodes")}
    assert listed[episode]["mechanisms"]["memory_prior"] == sum(
        e["event"] == "memory_prior" for e in _events(run / "events" / f"{episode}.jsonl")
    )


needs_chromium = pytest.mark.skipif(
    shutil.which("chromedriver") is None or shutil.which("chromium") is None,
    reason="chromium + chromium-driver are missing (.ci/run installs them)",
)


@needs_chromium
def test_the_page_shows_the_prior_change_and_links_its_writers(run: Path, server: ViewerServer) -> None:
    pytest.importorskip("selenium", reason="selenium is in the dev extra")
    from selenium.webdriver.common.by import By

    from fastslow.view.browser import chromium_driver

    episode, change = _prior_episode(run)
    driver = chromium_driver()
    try:
        open_view(driver, server.url + f"#/run/0/episode/{episode}")
        wait_for(driver, "details.ev-memory_prior")
        shown = driver.find_elements(By.CSS_SELECTOR, f"#step-{change['step'] + 1} details.ev-memory_prior")
        assert len(shown) == 1
        box = shown[0]
        click(driver, box.find_element(By.TAG_NAME, "summary"))
        text = box.text
        assert change["proposed"] in text and change["action"] in text
        with sqlite3.connect(f"file:{run / 'memory.sqlite'}?mode=ro", uri=True) as db:
            (data,) = db.execute("SELECT data FROM memories WHERE id = ?", (change["records"][0],)).fetchone()
        record = json.loads(data)
        assert f"{record['tag']}/{record['subtag']}" in text and record["observation"][:40] in text
        links = box.find_elements(By.CSS_SELECTOR, ".endorsed a.writer-link")
        assert [a.text for a in links] == change["endorsed_by"]
        writer = change["endorsed_by"][0]
        assert links[0].get_attribute("href").endswith(f"#/run/0/episode/{writer}")
        click(driver, links[0])
        # the page marks the route it has rendered on #app: only then is the new h1 the one to read (the
        # old one goes stale under a probe that reads it while the view is replaced)
        route = f"#/run/0/episode/{writer}"
        script = "return document.getElementById('app').dataset.route"
        wait_until(lambda: driver.execute_script(script) == route, what=f"the view {route}")
        assert writer in driver.find_element(By.TAG_NAME, "h1").text
    finally:
        driver.quit()
