"""Who chose each step: a step whose action hand-written task logic decided is logged as ``procedure`` with
its rule as the reason, and metrics.json's step shares (one per source) add up to 1 and are the counts of
the event logs - on real swift-only episodes of dev variations: secondary paint (a task procedure) and
identify-life-stages-2 (a judgement). With the task logic off no step is a procedure step."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from fastslow.build import make_agent
from fastslow.config import load_config
from fastslow.controller.arbiter import Chosen
from fastslow.core.hooks import ProposalTurn
from fastslow.core.proposal import Proposal, RankedAction
from fastslow.core.trajectory import Trajectory
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.procedures.logic import TaskLogic, general_focus_check
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.eval.evaluate import evaluate
from fastslow.eval.report import load_run, write_report
from fastslow.eval.runner import run_episode
from fastslow.events import EnvStep, ListSink
from fastslow.procedures.hook import ProcedureHook
from fastslow.swift import make_policy, make_proposer
from fastslow.swift.hook import PolicyHook
from fastslow.view.data import open_runs
from fastslow.vocab import PROCEDURE_RULES, STEP_SOURCES, SWIFT_BRANCH

PAINT = Episode(3, 18)
"""chemistry-mix-paint-secondary-color, its first dev variation: the paint procedure acts."""
LIFE = Episode(13, 4)
"""identify-life-stages-2, its first dev variation: the life-stages judgement acts."""
STEP_LIMIT = ["env.step_limit=12"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sources") / "run"
    evaluate(load_config("expert", STEP_LIMIT), [PAINT, LIFE], out)
    return out


def _steps(run: Path) -> list[dict[str, object]]:
    return [
        e
        for log in sorted((run / "events").glob("*.jsonl"))
        for line in log.read_text(encoding="utf-8").splitlines()
        if (e := json.loads(line))["event"] == "env_step"
    ]


def test_step_shares_add_up_to_one_and_are_the_logs_counts(run: Path, tmp_path: Path) -> None:
    steps = _steps(run)
    counts = Counter(str(s["source"]) for s in steps)
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    usage = metrics["usage"]
    shares = usage["step_shares"]
    assert usage["env_steps"] == len(steps) and list(shares) == list(STEP_SOURCES)
    assert abs(sum(shares.values()) - 1) < 1e-5
    assert shares == {s: round(counts[s] / len(steps), 6) for s in STEP_SOURCES}
    assert counts["procedure"] > 0 and counts["swift"] > 0  # both pathways acted
    # usage's Swift share is the learned Swift's alone; the authors' counter takes the whole Swift branch
    assert usage["swift_step_share"] == round(counts["swift"] / len(steps), 4)
    assert usage["buffer_step_share"] == 0
    branch = sum(counts[s] for s in SWIFT_BRANCH)
    assert branch == len(steps)
    assert metrics["mechanisms"]["paper"]["swift_step_share"] == 1.0
    # the report's table and the viewer's answers say the same
    write_report([run], tmp_path / "report")
    table = (tmp_path / "report" / "step_shares.csv").read_text(encoding="utf-8").splitlines()
    assert table[0].split(",")[:4] == ["config", "env steps", "swift", "procedure"]
    assert table[1].split(",")[3] == f"{100 * shares['procedure']:.2f}%"
    (view,), _ = open_runs([run])
    assert view.summary()["step_shares"]["procedure"] == shares["procedure"]
    listed: Counter[str] = Counter()
    for entry in view.episodes():
        listed.update(entry["sources"])
        assert sum(entry["sources"].values()) == entry["steps"]
    assert listed == counts


def test_a_format_5_run_gets_its_step_shares_from_its_logs(run: Path, tmp_path: Path) -> None:
    """metrics.json format 5 had no step shares (and counted every step labelled swift as Swift's):
    ``fastslow report`` recomputes it from the logs."""
    old = tmp_path / "old"
    shutil.copytree(run, old)
    data = json.loads((old / "metrics.json").read_text(encoding="utf-8"))
    del data["usage"]["step_shares"]
    data["format_version"] = 5
    (old / "metrics.json").write_text(json.dumps(data), encoding="utf-8")
    assert load_run(old).metrics == load_run(run).metrics


def test_procedure_steps_name_their_rule(run: Path) -> None:
    steps = _steps(run)
    rules = {str(s["reason"]) for s in steps if s["source"] == "procedure"}
    # swift-only adds no note to a step's reason: a procedure step's reason is its rule
    assert {"procedure:paint", "judgement:life-stages"} <= rules <= set(PROCEDURE_RULES)
    assert {s["reason"] for s in steps if s["source"] == "swift"} == {"swift top"}


def test_no_procedure_step_with_the_task_logic_off(env: ScienceWorldAdapter) -> None:
    """``procedures.enabled=false`` turns every task procedure and judgement off."""
    config = load_config("swift-only", [*STEP_LIMIT, "procedures.enabled=false"])
    for episode in [PAINT, LIFE]:
        sink = ListSink()
        run_episode(env, make_agent(config), episode, config, sink)
        steps = [e for e in sink.events if isinstance(e, EnvStep)]
        assert steps and {s.source for s in steps} <= {"swift", "fallback"}
        assert not any(s.reason.startswith(PROCEDURE_RULES) for s in steps)


def test_a_procedure_action_swift_ranked_first_too_is_still_the_procedures(env: ScienceWorldAdapter) -> None:
    """The rule decided the action even when the learned Swift's own top is the same action."""
    config = load_config("expert")
    first = env.reset(PAINT.task_id, PAINT.variation)
    name = get_task(PAINT.task_id).name
    policy = make_policy(config.swift)
    judged = TaskLogic().judged(first, name, general_focus_check(policy.focus_allowed, name))
    assert judged is not None and judged.rule == "procedure:paint"
    hooks = [PolicyHook(policy), ProcedureHook(TaskLogic(), policy.focus_allowed)]
    traj = Trajectory(
        PAINT.task_id, name, PAINT.variation, first.task_description, first, semantics=SEMANTICS
    )
    others = [a for a in first.valid_actions if a != judged.action][:2]
    swift_top = Proposal(
        (RankedAction(judged.action, 9.0), *(RankedAction(a, 1.0) for a in others)), confidence=0.9
    )
    turn = ProposalTurn(make_proposer(config.swift), traj, first, hooks, lambda p: False)
    revision = turn.run(swift_top)
    ranked, note = revision.proposal, revision.note
    top = ranked.candidates[0]
    assert (top.action, top.decided_by, note) == (judged.action, "procedure:paint", "")
    assert all(c.decided_by is None for c in ranked.candidates[1:])
    chosen = Chosen.of(top, top.action)
    assert (chosen.source, chosen.rule) == ("procedure", "procedure:paint")
    decision = chosen.decision(chosen.rule or "")
    assert (decision.source, decision.reason) == ("procedure", "procedure:paint")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _dom(page: Path, fragment: str) -> str:
    """The DOM of the static report page at ``fragment``, after its script ran (headless Chromium)."""
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--dump-dom",
                page.as_uri() + fragment,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout


@pytest.mark.skipif(CHROMIUM is None, reason="Debian package chromium is not installed (.ci/run installs it)")
def test_the_viewer_filters_and_colours_procedure_steps(run: Path, tmp_path: Path) -> None:
    page = write_report([run], tmp_path)
    steps = _steps(run)
    # the paint episode is all procedure; the life-stages one has the learned Swift's steps too
    listed = _dom(page, "#/run/0/episodes?from=swift")
    assert '<p class="muted" id="count">1 of 2 episodes</p>' in listed
    assert f'data-id="{LIFE.episode_id}"' in listed and f'data-id="{PAINT.episode_id}"' not in listed
    assert '<option value="procedure">procedure</option>' in listed
    timeline = _dom(page, f"#/run/0/episode/{PAINT.episode_id}")
    paint = sum(s["source"] == "procedure" and s["reason"] == "procedure:paint" for s in steps)
    assert timeline.count('<tr class="step s-procedure"') == paint > 0
    assert '<span class="src src-procedure">▌procedure </span>' in timeline  # the legend
