"""What the trajectory viewer shows of one episode, and the viewer's page (paper §5, App. D/E: the logs).

Read from a run's own event logs, as every metric is: an episode's list entry (``index_episode``: ids,
both score conventions, outcome, the source of the last action, the steps by source, mechanism counts,
first gain / -100 / Gate-1 drop) and the whole episode (``read_episode``: every step with the typed
events that led to it, model prompts and completions included). ``store_records`` looks up the memory
records a retrieval returned in the run's SQLite store. ``page`` is the single-page viewer
(``viewer_static/``: plain HTML, CSS and JavaScript inline, nothing fetched from elsewhere) that
``fastslow view`` serves and ``fastslow report`` writes with its data embedded. The page puts every text
from the logs in as text, never markup.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from fastslow.env.config import DEFAULT_WORLD
from fastslow.env.world import get_world
from fastslow.errors import CorruptLogError, UsageError
from fastslow.eval.rundir import RunRecord
from fastslow.events import EpisodeStart, iter_events, log_episode_id, parse_event
from fastslow.redact import redact_data
from fastslow.vocab import STEP_SOURCES

OUTCOMES = ("success", "failure", "step_limit", "early_stop", "error", "other", "unreadable", "unfinished")
"""An episode's outcome for the filters: success (score 100), failure (-100), step limit, early stop,
environment error; ``other`` for an episode that ended otherwise below 100 (e.g. the agent's own end);
``unreadable`` for a log that cannot be read whole (a line that is not an event, bytes that are not
UTF-8, a last line cut off, a file that is not one episode: ``events.iter_events``) and ``unfinished``
for one without an episode end (``episode_entry``)."""

MECHANISMS: dict[str, str] = {
    "sage": "Sage was called",
    "critic": "Critic fired",
    "critic_injected": "Critic's actions were injected",
    "gate_drop": "Gate-1 dropped an action",
    "gate_drop_focus": "Gate-1 dropped a focus",
    "gate_repair": "Gate-1 repaired an action",
    "stagnation": "stagnation reported",
    "memory_retrieval": "memory retrieved",
    "memory_injection": "memory injected",
    "memory_write": "memory written",
    "memory_fallback": "memory fell back",
    "memory_prior": "memory's action prior changed Swift's top",
    "model_error": "a model call failed",
}
"""Mechanism filters of the episode list: key -> what the episode had at least once."""


def script_json(value: Any) -> str:
    """JSON safe inside an HTML ``<script>`` element: ``<``, ``>`` and ``&`` as ``\\u`` escapes, so no
    text from the logs (``</script>``, ``<!--<script>``) can end or change the script's content."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    """The events of one log as plain dicts with every field, validated as every reader of the logs
    validates them (``events.iter_events``: a torn last line of a crashed run is skipped, any other bad
    line raises ``CorruptLogError`` naming the file and the line)."""
    for event in iter_events(path):
        yield event.model_dump(mode="json")


def outcome(end: str, final_score: int, best: int, success_score: int = 100) -> str:
    """The filter outcome of an episode from its end state and scores (``success_score``: its world's,
    ``WorldSemantics.success_score``)."""
    if max(final_score, best) >= success_score:
        return "success"
    if end == "failure" or final_score < 0:
        return "failure"
    return end if end in OUTCOMES else "other"


def index_episode(path: Path) -> dict[str, Any] | None:
    """One episode's list entry: ids, both scores, outcome, steps, the source of the last action, the
    steps by source (``sources``: swift, procedure, fallback, sage, ... with at least one step, in
    ``vocab.STEP_SOURCES`` order), mechanism counts and the first score gain / -100 / Gate-1 drop steps.
    None if it never finished."""
    start: dict[str, Any] | None = None
    end: dict[str, Any] | None = None
    best = 0
    semantics = get_world().semantics  # the header's world, once read (it is the first event)
    last_source = ""
    sources = dict.fromkeys(STEP_SOURCES, 0)
    counts = dict.fromkeys(MECHANISMS, 0)
    firsts: dict[str, int | None] = {"gain": None, "failure": None, "gate_drop": None}
    for e in _lines(path):
        kind = e.get("event")
        if kind == "env_step":
            best = max(best, e["score"])
            last_source = e["source"]
            sources[e["source"]] += 1
            if e["reward"] > 0 and firsts["gain"] is None:
                firsts["gain"] = e["step"]
            if e["score"] < 0 and firsts["failure"] is None:
                firsts["failure"] = e["step"]
        elif kind == "episode_start":
            start = e
            semantics = get_world(e.get("world") or DEFAULT_WORLD).semantics
        elif kind == "episode_end":
            end = e
        else:
            for key in _mechanisms(e, semantics.commitment_verb):
                counts[key] += 1
            if kind == "gate_decision" and e["outcome"] == "drop" and firsts["gate_drop"] is None:
                firsts["gate_drop"] = e["step"] + 1
    if start is None or end is None:
        return None
    final = end["final_score"]
    return {
        "id": start["episode_id"],
        "file": path.name,
        "task_id": start["task_id"],
        "task_name": start["task_name"],
        "group": _group(start),
        "variation": start["variation"],
        "seed": start.get("seed"),
        "score": max(best, final, 0),
        "score_strict": max(final, 0),
        "final_score": final,
        "end": end["end"],
        "outcome": outcome(end["end"], final, best, semantics.success_score),
        "steps": end["steps"],
        "wall_s": end["wall_s"],
        "error": end.get("error"),
        "last_source": last_source,
        "sources": {k: v for k, v in sources.items() if v},
        "mechanisms": {k: v for k, v in counts.items() if v},
        "first": firsts,
    }


def _group(header: dict[str, Any]) -> str:
    """The length group of a header's task in its world (a header without ``world`` is ScienceWorld's);
    "" when the header names no task this fastslow knows in that world."""
    task_id = header.get("task_id")
    if not isinstance(task_id, int):
        return ""
    try:
        world = get_world(header.get("world") or DEFAULT_WORLD)
        return world.task(task_id).group if 0 <= task_id < len(world.tasks()) else ""
    except UsageError:
        return ""


def episode_entry(path: Path) -> dict[str, Any]:
    """``index_episode``'s entry, or, for a log that cannot be read whole or has no end, an entry with
    what its header says, the mark of ``log_problem`` as ``outcome`` and its reason as ``problem``.
    Never raises for what a log holds: the list shows every log of a run."""
    try:
        entry = index_episode(path)
    except (CorruptLogError, OSError):
        entry = None
    if entry is not None:
        return entry
    mark, problem = log_problem(path) or ("unreadable", f"event log {path} cannot be summarised")
    return _marked(path, mark, problem)


def log_problem(path: Path) -> tuple[str, str] | None:
    """Why the log at ``path`` cannot be shown whole: (mark, one-line reason); None when it can.

    ``unreadable``: a line that is not an event, bytes that are not UTF-8 or a file that is not one
    episode (``CorruptLogError``'s message), a file that cannot be opened, a last line cut off, no
    ``episode_start``;
    ``unfinished``: whole lines but no ``episode_end`` (the episode was stopped, or is being played)."""
    kinds: dict[str, int] = {}
    try:
        for e in iter_events(path):
            kinds[e.event] = kinds.get(e.event, 0) + 1
    except CorruptLogError as exc:
        return "unreadable", str(exc)
    except OSError as exc:
        return "unreadable", f"event log {path} cannot be read: {exc.strerror or exc}"
    steps = kinds.get("env_step", 0)
    if _cut_off(path):
        return (
            "unreadable",
            f"event log {path} is cut off: its last line is incomplete ({steps} steps readable)",
        )
    if "episode_start" not in kinds:
        return "unreadable", f"event log {path} has no episode_start"
    if "episode_end" not in kinds:
        why = "the episode was stopped, or is still being played"
        return "unfinished", f"event log {path} has no episode_end after {steps} steps: {why}"
    return None


def _cut_off(path: Path) -> bool:
    """Whether the file's last line is incomplete: every line the event writer appends ends in a
    newline, so a file ending otherwise was cut short (or is being written this very moment)."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            if size == 0:
                return False
            fh.seek(size - 1)
            return fh.read(1) != b"\n"
    except OSError:
        return False


def _marked(path: Path, outcome: str, problem: str) -> dict[str, Any]:
    """A list entry for a log ``index_episode`` cannot summarise: its id is the file's
    (``events.log_episode_id``), the rest from its header when its first line is a readable header of
    that episode, else empty, and ``problem``."""
    header: dict[str, Any] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = parse_event(fh.readline())
        # Another episode's header (a log copied over this one) would list the file as that episode:
        # two entries of one id, the other's opening in its place.
        if isinstance(first, EpisodeStart) and first.episode_id == log_episode_id(path):
            header = first.model_dump(mode="json")
    except (OSError, ValueError):
        pass
    return {
        "id": log_episode_id(path),
        "file": path.name,
        "task_id": header.get("task_id"),
        "task_name": header.get("task_name", ""),
        "group": _group(header),
        "variation": header.get("variation"),
        "seed": header.get("seed"),
        "score": None,
        "score_strict": None,
        "final_score": None,
        "end": outcome,
        "outcome": outcome,
        "steps": None,
        "wall_s": None,
        "error": None,
        "last_source": "",
        "sources": {},
        "mechanisms": {},
        "first": {"gain": None, "failure": None, "gate_drop": None},
        "problem": problem,
    }


def _mechanisms(e: dict[str, Any], commitment_verb: str | None) -> Iterator[str]:
    """The mechanism counters an event adds to (``commitment_verb``: the world's focus-like verb, whose
    Gate-1 drops are counted apart)."""
    kind = e.get("event")
    if kind == "sage_call":
        yield "sage"
    elif kind == "critic_call":
        yield "critic"
        if e.get("injected", True) and e.get("actions"):
            yield "critic_injected"
    elif kind == "gate_decision":
        if e["outcome"] == "drop":
            yield "gate_drop"
            if commitment_verb and e["original"].strip().lower().startswith(commitment_verb):
                yield "gate_drop_focus"
        elif e["outcome"] == "repair":
            yield "gate_repair"
    elif kind == "stagnation_report":
        yield "stagnation"
    elif kind in ("memory_retrieval", "memory_injection", "memory_write", "memory_fallback", "memory_prior"):
        yield kind
    elif kind == "model_call" and e.get("error"):
        yield "model_error"


def read_episode(path: Path) -> dict[str, Any]:
    """An episode whole: its header (task, description, config name), its end, and its steps in order,
    each with the events logged since the previous step (``events``, typed dicts with every field);
    ``after`` holds the events logged after the last step (e.g. a Critic effect decided at the end)."""
    header: dict[str, Any] = {}
    end: dict[str, Any] = {}
    steps: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for e in _lines(path):
        kind = e.get("event")
        if kind == "episode_start":
            header = {k: e.get(k) for k in _HEADER_KEYS}
        elif kind == "episode_end":
            end = {k: v for k, v in e.items() if k not in ("t", "event")}
        elif kind == "env_step":
            step = {k: v for k, v in e.items() if k not in ("t", "event")}
            step["events"] = pending
            steps.append(step)
            pending = []
        else:
            pending.append({k: v for k, v in e.items() if k != "t"})
    return {"header": header, "end": end, "steps": steps, "after": pending}


_HEADER_KEYS = (
    "episode_id",
    "task_id",
    "task_name",
    "variation",
    "seed",
    "split",
    "config_name",
    "task_description",
    "git_commit",
    "versions",
)


def store_records(record: RunRecord | None, run_dir: Path, ids: set[str]) -> dict[str, dict[str, Any]]:
    """Memory records by id from the run's SQLite store (``run.json``'s store; the run directory's own
    copy when the run was moved); empty for a PostgreSQL store or one that is gone, and the page then
    shows the ids only."""
    if not ids or record is None or record.store is None or record.store.kind != "sqlite":
        return {}
    path = Path(record.store.location)
    if not path.is_file():  # a run directory moved since: its own store moved with it
        path = run_dir / path.name
    if not path.is_file():
        return {}
    found: dict[str, dict[str, Any]] = {}
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            marks = ",".join("?" * len(ids))
            rows = conn.execute(f"SELECT id, data FROM memories WHERE id IN ({marks})", sorted(ids))
            for rid, text in rows:
                data = json.loads(text)
                found[rid] = {k: data.get(k) for k in _RECORD_KEYS if k in data}
        finally:
            conn.close()
    except (sqlite3.Error, ValueError):
        return {}
    return found


_RECORD_KEYS = (
    "tag",
    "subtag",
    "task_name",
    "episode_id",
    "step",
    "room",
    "action",
    "observation",
    "score_before",
    "score_after",
    "recent",
)


def _memory_events(episode: dict[str, Any]) -> Iterator[dict[str, Any]]:
    groups = [s["events"] for s in episode["steps"]] + [episode["after"]]
    return (e for group in groups for e in group if e.get("event") in ("memory_retrieval", "memory_prior"))


def retrieved_ids(episode: dict[str, Any]) -> set[str]:
    """The record ids every memory retrieval of a ``read_episode`` result returned, and those behind
    every change the action prior made (``memory_prior``'s ``records``)."""
    return {rid for e in _memory_events(episode) for rid in e.get("ids", e.get("records", []))}


def writer_names(episode: dict[str, Any]) -> set[str]:
    """The episodes a ``read_episode`` result's memory use names as the writers of what it read: a
    retrieval's ``writers`` (stream runs, ``amm.provenance``) and a prior change's ``endorsed_by`` and
    ``disputed_by``, as ``memory.retrieval.writer_name`` names them (``13-0027`` for an episode of the
    same run, ``warmup/13-0001`` for its warm-up, another run's full key)."""
    names: set[str] = set()
    for e in _memory_events(episode):
        names.update(e.get("writers") or [])
        names.update(e.get("endorsed_by") or [])
        names.update(e.get("disputed_by") or [])
    return names


def viewer_assets() -> dict[str, str]:
    """The page's parts: ``html`` (with ``/*STYLE*/``, ``/*DATA*/``, ``/*SCRIPT*/`` to fill), ``css``,
    ``js``."""
    folder = resources.files("fastslow.eval") / "viewer_static"
    return {k: (folder / f"viewer.{k}").read_text(encoding="utf-8") for k in ("html", "css", "js")}


def viewer_boot(embedded: dict[str, Any] | None) -> str:
    """The page's data element content: the filter vocabulary and, for a static page, its data, with
    every secret masked (``fastslow.redact.redact_data``, as the live viewer's answers are): a page is
    shared, and logs written before the event writer redacted may still quote a password."""
    config = {"mechanisms": MECHANISMS, "outcomes": list(OUTCOMES), "sources": list(STEP_SOURCES)}
    return script_json({"config": config, "embedded": redact_data(embedded)})


def page(embedded: dict[str, Any] | None = None) -> str:
    """The viewer page, standalone. ``embedded``: the data of a static page (``{"runs": [...],
    "episodes": {i: [...]}, "details": {"i/episode_id": {...}}}``); None: the page reads the JSON API of
    the server that sent it (``fastslow view``)."""
    parts = viewer_assets()
    data = viewer_boot(embedded)
    html = parts["html"].replace("/*STYLE*/", parts["css"]).replace("/*DATA*/", data)
    return html.replace("/*SCRIPT*/", parts["js"])
