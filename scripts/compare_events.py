"""Compare the event logs of two run directories episode by episode, modulo timing.

    python scripts/compare_events.py A_DIR B_DIR [--ignore KEY ...]

Every ``events/<episode>.jsonl`` of A is read beside B's file of the same name; each event is compared
without its timing fields (``t``, ``duration_ms``, ``latency_s``, ``latency_ms``, ``wall_s``) and, in
the episode header, without what names the code rather than the play (``config``, ``git_commit``,
``versions``; the resolved config changes when a config section moves). A field written as ``null`` or
``false`` counts as absent, so a log written before an optional field existed compares equal to one that
carries the field at its default. The same holds for a header field at any other default the schema
declares (``fastslow.events.EpisodeStart``, e.g. ``world: scienceworld``, the world of every log written
before the field existed): a reader fills an absent field with that default, so a header that lacks it
and one that carries it parse to the same header and compare equal; any other value (``world:
textworldexpress``) is compared as written. AMM record ids are random, so
they are compared by order of first appearance (``record_id``, ``ids``). Prints one line per episode
(``same`` or the first differing event) and a summary; exit 0 when every episode is the same, 1 when
one differs or exists on one side only, 2 on bad input. ScienceWorld 1.2.3 is not fully deterministic
(two runs of one commit can differ): an episode whose first difference is an ``env_step`` with the same
action, source and reason but another answer of the environment (``observation``, ``score``,
``n_valid``, ...) is reported as ``same decisions until the environment diverged`` and counted apart;
run the old commit twice to see which episodes do that on their own.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

TIMING = ("t", "duration_ms", "latency_s", "latency_ms", "wall_s")
HEADER = ("config", "git_commit", "versions")
RECORD_IDS = ("record_id", "ids")
ENV_FIELDS = {"observation", "score", "reward", "moves", "end", "n_valid"}
"""What the environment answers in an ``env_step`` (the rest is the agent's decision)."""
DIVERGED = "same decisions until the environment diverged"


def _canonical_ids(events: list[dict[str, Any]]) -> None:
    """Replace each AMM record id by its rank of first appearance in the episode (r1, r2, ...)."""
    seen: dict[str, str] = {}

    def name(rid: Any) -> Any:
        if not isinstance(rid, str):
            return rid
        return seen.setdefault(rid, f"r{len(seen) + 1}")

    for event in events:
        for key in RECORD_IDS:
            value = event.get(key)
            if isinstance(value, list):
                event[key] = [name(v) for v in value]
            elif value is not None:
                event[key] = name(value)


def header_defaults() -> dict[str, Any]:
    """Each ``episode_start`` field's declared default (``fastslow.events.EpisodeStart``): what a reader
    makes of a header that lacks the field. Fields without one, with a computed one (``t``), and the
    event's kind (``event``) are left out."""
    from fastslow.events import EpisodeStart

    return {
        name: field.default
        for name, field in EpisodeStart.model_fields.items()
        if name != "event" and not field.is_required() and field.default_factory is None
    }


def _events(path: Path, ignore: set[str]) -> list[dict[str, Any]]:
    defaults = header_defaults()
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        event = json.loads(line)
        header = event.get("event") == "episode_start"
        drop = ignore | (set(HEADER) if header else set())
        events.append(
            {
                k: v
                for k, v in event.items()
                if k not in drop
                and v is not None
                and v is not False
                and not (header and k in defaults and v == defaults[k])
            }
        )
    _canonical_ids(events)
    return events


def _first_difference(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> str | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            keys = sorted(k for k in x.keys() | y.keys() if x.get(k) != y.get(k))
            what = x.get("event", "?")
            step = x.get("step", "")
            if what == "env_step" and set(keys) <= ENV_FIELDS:
                return f"{DIVERGED} at step {step} ({', '.join(keys)})"
            return f"event {i} ({what}, step {step}) differs in {', '.join(keys)}"
    if len(a) != len(b):
        return f"{len(a)} vs {len(b)} events"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--ignore", action="append", default=[], help="another event field to ignore")
    args = parser.parse_args(argv)
    logs = {}
    for side in (args.a, args.b):
        folder = side / "events"
        if not folder.is_dir():
            print(f"not a run directory (no events/): {side}", file=sys.stderr)
            return 2
        logs[side] = {p.name: p for p in folder.glob("*.jsonl")}
    ignore = set(TIMING) | set(args.ignore)
    differ = diverged = 0
    for name in sorted(logs[args.a].keys() | logs[args.b].keys()):
        left, right = logs[args.a].get(name), logs[args.b].get(name)
        if left is None or right is None:
            print(f"{name}: only in {args.a if right is None else args.b}")
            differ += 1
            continue
        why = _first_difference(_events(left, ignore), _events(right, ignore))
        print(f"{name}: {'same' if why is None else why}")
        if why is not None and why.startswith(DIVERGED):
            diverged += 1
        elif why is not None:
            differ += 1
    total = len(logs[args.a].keys() | logs[args.b].keys())
    same = total - differ - diverged
    print(f"{same} of {total} episodes the same, {diverged} with {DIVERGED}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
