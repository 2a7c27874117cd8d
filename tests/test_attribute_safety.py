"""`fastslow attribute` as safe as `eval` (issue 49): its --out is claimed like a run directory (a user's
file, the parent run, another attribution's work and a live attribute are refused before anything is
written), its workers and their JVMs die with it (kill -9), an unfinished fork is replayed from
scratch on resume, and Ctrl-C of `attribute` and `eval` is one line and exit 130.

Every case drives the real command line (subprocesses, real ScienceWorld) on one short parent run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fastslow.eval.attribute import mechanism_points
from fastslow.events import EpisodeEnd, EpisodeStart, read_events

FASTSLOW = [sys.executable, "-m", "fastslow.cli"]
PARENT = ["--config", "swift-srm", "--set", "dev", "--tasks", "13", "--limit-per-task", "1"]
# the first dev variation of boil: the packaged Swift's Gate-1 drops at steps 5 and 18 in 20 steps with
# a loop window of 10 (as tests/test_fork.py pins it), so two points, four forks of a few seconds each
PARENT += ["-o", "swift.loop_window=10"]
ATTRIBUTE = ["--mechanism", "gate-drop", "--limit", "2"]


def fastslow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FASTSLOW, *args], capture_output=True, text=True, timeout=600)


def one_error_line(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """The command failed with exit 2 and one stderr line holding every fragment."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    flat = " ".join(lines[0].split())
    for fragment in fragments:
        assert fragment in flat, flat
    return flat


def snapshot(out: Path) -> dict[str, bytes]:
    """Every file under ``out`` and its bytes."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("parent") / "run"
    proc = fastslow("eval", *PARENT, "-o", "env.step_limit=20", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    points = mechanism_points(out, "gate-drop")
    assert len(points) >= 2, f"the parent's Gate-1 drops moved ({points}): pick an episode with two"
    return out


@pytest.fixture(scope="module")
def clean(parent: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The attribution the interrupted ones must end equal to: one run, never stopped."""
    out = tmp_path_factory.mktemp("clean") / "attr"
    proc = fastslow("attribute", str(parent), *ATTRIBUTE, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    payload = json.loads((out / "attribution.json").read_text())
    assert payload["sampled"] == payload["tried"] == 2
    return out


def result(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "attribution.json").read_text())
    return data


def fork_logs(out: Path) -> list[Path]:
    return sorted(out.glob("forks/*/*/events/*.jsonl"))


# -- --out: refused before anything is written --------------------------------------------------------


def test_a_user_file_in_out_is_refused_and_kept(parent: Path, tmp_path: Path) -> None:
    """Before: the user's attribution.json was overwritten, exit 0."""
    out = tmp_path / "ub"
    out.mkdir()
    (out / "attribution.json").write_text('{"my":1}\n')
    proc = fastslow("attribute", str(parent), "--mechanism", "gate-drop", "--limit", "1", "--out", str(out))
    one_error_line(proc, "attribution.json", "which no fastslow attribute wrote", "choose another --out")
    assert snapshot(out) == {"attribution.json": b'{"my":1}\n'}


def test_the_parent_run_is_never_the_out(parent: Path) -> None:
    """Before: --out PARENT wrote attribution.json and forks/ into the parent run."""
    before = snapshot(parent)
    for out, relation in ((parent, "is"), (parent / "sub", "is inside"), (parent.parent, "holds")):
        proc = fastslow("attribute", str(parent), *ATTRIBUTE, "--out", str(out))
        one_error_line(proc, f"--out {out} {relation} the run {parent}")
    assert snapshot(parent) == before
    assert not (parent / "sub").exists()


def test_a_fork_file_no_attribute_wrote_is_refused_with_one_line(
    parent: Path, clean: Path, tmp_path: Path
) -> None:
    """Before: a foreign forks/.../metrics.json ended in a traceback."""
    out = tmp_path / "foreign"
    control = out / "forks" / "13-0004-at006" / "control"
    control.mkdir(parents=True)
    (control / "metrics.json").write_text("{}\n")
    proc = fastslow("attribute", str(parent), *ATTRIBUTE, "--out", str(out))
    one_error_line(proc, "forks/13-0004-at006/control/metrics.json", "which no fastslow attribute wrote")
    assert snapshot(out) == {"forks/13-0004-at006/control/metrics.json": b"{}\n"}
    # a finished attribution whose fork metrics someone edited: no longer what the fork wrote
    edited = tmp_path / "edited"
    shutil.copytree(clean, edited)
    metrics = next(edited.glob("forks/*/off/metrics.json"))
    metrics.write_text(metrics.read_text().replace('"episodes": 1', '"episodes": 2'))
    before = snapshot(edited)
    proc = fastslow("attribute", str(parent), *ATTRIBUTE, "--out", str(edited))
    one_error_line(proc, str(metrics.relative_to(edited)), "which no fastslow attribute wrote")
    assert snapshot(edited) == before


def test_another_parent_or_key_into_the_same_out_is_refused(
    parent: Path, clean: Path, tmp_path: Path
) -> None:
    """Before: `attribute PAR2 --out DIR_OF_PAR` reported PAR's forks as PAR2's, exit 0."""
    other = tmp_path / "par2"  # the same episode under another step limit: another run, another config
    proc = fastslow("eval", *PARENT, "-o", "env.step_limit=19", "--out", str(other))
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "attr"
    shutil.copytree(clean, out)
    before = snapshot(out)
    claimed = json.loads((out / ".fastslow-claim.json").read_text())
    assert claimed["kind"] == "attribute"
    assert set(claimed["key"]) == {"run_id", "config_hash", "mechanism", "seed", "limit"}
    one_error_line(
        fastslow("attribute", str(other), *ATTRIBUTE, "--out", str(out)),
        "holds the attribute of other settings (run_id:",
    )
    for changed, what in (
        (["--mechanism", "gate-drop", "--limit", "1"], "limit: 2 -> 1"),
        ([*ATTRIBUTE, "--seed", "1"], "seed: 0 -> 1"),
        (["--mechanism", "critic", "--limit", "2"], "mechanism: 'gate-drop' -> 'critic'"),
    ):
        one_error_line(fastslow("attribute", str(parent), *changed, "--out", str(out)), what)
    assert snapshot(out) == before
    # the same command resumes: every fork read back, the same result
    again = fastslow("attribute", str(parent), *ATTRIBUTE, "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert result(out) == result(clean)
    # nothing rewritten but the bookkeeping (the lock's holder, the manifest's new lines)
    assert {k: v for k, v in snapshot(out).items() if not Path(k).name.startswith(".")} == {
        k: v for k, v in before.items() if not Path(k).name.startswith(".")
    }


# -- kill -9 and Ctrl-C: no orphans, a resume equal to a clean run ---------------------------------------


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    return children


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (workers and their JVMs)."""
    children = _children()
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _is_jvm(pid: int) -> bool:
    try:
        return b"scienceworld.jar" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone between the listing and the read
        return False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _as_a_shell_starts_it() -> None:
    """Ctrl-C at its default action and not blocked, whatever this test process (a pytest-xdist
    worker, after other tests) ignores or blocks: both are inherited across exec."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _start_playing(
    args: list[str], logs: Any, jvms: int = 2, new_session: bool = False
) -> tuple[subprocess.Popen[str], set[int]]:
    """Start a command; return it once ``jvms`` JVMs (one per worker) are up below it and a log is
    being written, with its family of processes then (workers and JVMs)."""
    proc = subprocess.Popen(
        [*FASTSLOW, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=new_session,
        preexec_fn=_as_a_shell_starts_it,
    )
    deadline = time.monotonic() + 180
    family: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None:
        family = _descendants(proc.pid)
        if len([p for p in family if _is_jvm(p)]) == jvms and logs():
            return proc, _descendants(proc.pid)
        time.sleep(0.2)
    proc.kill()
    proc.wait(timeout=60)
    raise AssertionError(f"no {jvms} JVMs and a log below the command (exit {proc.returncode}): {family}")


def _sigint_ignored(pid: int) -> str:
    """Whether the process ignores or blocks SIGINT (``SigIgn`` / ``SigBlk`` of /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "gone"
    bit = 1 << (signal.SIGINT - 1)
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    masks = {name: int(fields.get(name, "0").strip(), 16) for name in ("SigIgn", "SigBlk")}
    return f"ignored {bool(masks.get('SigIgn', 0) & bit)}, blocked {bool(masks.get('SigBlk', 0) & bit)}"


def _ctrl_c(proc: subprocess.Popen[str], family: set[int], *fragments: str) -> None:
    """Ctrl-C as a terminal sends it (SIGINT to the whole process group: the command, its workers,
    their JVMs): one line holding ``fragments``, exit 130, and no process of the command alive 10 s
    later."""
    ignored = _sigint_ignored(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 130, f"SIGINT in the command: {ignored}; stderr: {err}"
    assert len(lines) == 1, err
    for fragment in ("interrupted (Ctrl-C)", *fragments):
        assert fragment in " ".join(lines[0].split()), lines[0]
    survivors = _gone_within(family, 10)
    assert not survivors, f"alive 10 s after Ctrl-C: {survivors}"


def _gone_within(family: set[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds  # polled, not slept through
    while (survivors := [p for p in family if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    return survivors


def _one_episode_each(out: Path) -> None:
    """Every fork log holds one whole episode: replayed from scratch, never appended to."""
    logs = fork_logs(out)
    assert len(logs) == 4
    for log in logs:
        events = read_events(log)
        assert sum(isinstance(e, EpisodeStart) for e in events) == 1, log
        assert isinstance(events[-1], EpisodeEnd) and events[-1].end.value != "error", log


def test_kill_9_of_attribute_leaves_no_process_and_the_resume_equals_a_clean_run(
    parent: Path, clean: Path, tmp_path: Path
) -> None:
    """Before: the workers and their JVMs ran on (parent PID 1), a resume beside them was not locked
    out and its fork logs held two episodes each."""
    out = tmp_path / "attr"
    args = ["attribute", str(parent), *ATTRIBUTE, "--workers", "2", "--out", str(out)]
    first, family = _start_playing(args, lambda: fork_logs(out))
    try:
        beside = fastslow(*args)
        one_error_line(beside, "is in use by", f"pid {first.pid}", "wait for it")
    finally:
        first.send_signal(signal.SIGKILL)  # only the command: its workers must notice on their own
        first.wait(timeout=30)
    survivors = _gone_within(family, 10)
    assert not survivors, f"alive 10 s after kill -9: {survivors}"
    unfinished = [p for p in fork_logs(out) if not any(isinstance(e, EpisodeEnd) for e in read_events(p))]
    assert unfinished, "the kill left no unfinished fork: nothing for the resume to replay"
    assert not (out / "attribution.json").exists()
    resumed = fastslow(*args)
    assert resumed.returncode == 0, resumed.stderr
    assert result(out) == result(clean)
    _one_episode_each(out)


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_of_attribute_is_one_line_and_stops_its_workers(
    parent: Path, clean: Path, tmp_path: Path, workers: int
) -> None:
    """Before: with one worker (the command plays the forks itself) a traceback of py4j's answer to a
    KeyboardInterrupt inside a JVM call, exit 1; with two, no line at all. The resume of the first
    replays the fork whose JVM the same Ctrl-C killed, as a run never stopped would have played it."""
    out = tmp_path / "attr"
    args = ["attribute", str(parent), *ATTRIBUTE, "--workers", str(workers), "--out", str(out)]
    proc, family = _start_playing(args, lambda: fork_logs(out), jvms=workers, new_session=True)
    _ctrl_c(proc, family, "rerun the same command to resume")
    if workers == 1:  # (after a pool stopped, the kill -9 test's resume is the same)
        resumed = fastslow(*args)
        assert resumed.returncode == 0, resumed.stderr
        assert result(out) == result(clean)
        _one_episode_each(out)


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_of_eval_is_one_line_and_stops_its_workers(tmp_path: Path, workers: int) -> None:
    out = tmp_path / "run"
    args = ["eval", "--config", "oracle", "--set", "dev", "--tasks", "0-9", "--limit-per-task", "1"]
    args += ["--workers", str(workers), "--out", str(out)]
    logs = lambda: list((out / "events").glob("*.jsonl"))  # noqa: E731
    proc, family = _start_playing(args, logs, jvms=workers, new_session=True)
    _ctrl_c(proc, family, "rerun the same command to resume")


# -- point 8, where a parent cannot be replayed: say so up front, re-sample -----------------------------


def _copy_parent(parent: Path, to: Path) -> Path:
    shutil.copytree(parent, to)
    for stale in to.glob(".fastslow*"):  # the copy is read only: its lock and record are the parent's
        if stale.name == ".fastslow.lock":
            stale.unlink()
    return to


def _edit_log(log: Path, edit: Any) -> None:
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    log.write_text("".join(json.dumps(edit(event)) + "\n" for event in lines))


def test_a_point_whose_forks_do_not_replay_is_replaced_by_the_next_draw(parent: Path, tmp_path: Path) -> None:
    """A sampled point whose forks diverge from the parent is played again by the next seeded draw, so
    the attribution reports the points it was asked for, and says which it replaced. The divergence is
    planted: the parent's log says step K (the later point's own step) observed something else, so the
    later point's forks (which replay steps 1..K) diverge and the earlier point's do not."""
    from fastslow.eval.attribute import plan_attribution

    run = _copy_parent(parent, tmp_path / "parent")
    points = mechanism_points(run, "gate-drop")
    later, earlier = points[-1], points[0]
    assert earlier.step < later.step
    seed = next(
        s
        for s in range(50)
        if plan_attribution(run, "gate-drop", tmp_path / "x", limit=1, seed=s).chosen == [later]
    )
    log = run / "events" / f"{later.episode}.jsonl"

    def plant(event: dict[str, Any]) -> dict[str, Any]:
        if event["event"] == "env_step" and event["step"] == later.step:
            event["observation"] = "a sentence ScienceWorld never said"
        return event

    _edit_log(log, plant)
    out = tmp_path / "attr"
    args = ["attribute", str(run), "--mechanism", "gate-drop", "--limit", "1", "--seed", str(seed)]
    proc = fastslow(*args, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "note:" not in proc.stderr  # constant hash codes: nothing to warn of up front
    payload = result(out)
    assert payload["replay_caveat"] is None
    assert payload["replaced"] == [{"point": later.name, "by": next(p for p in points if p != later).name}]
    assert (payload["sampled"], payload["tried"], payload["replayed"], payload["diverged"]) == (1, 2, 1, 1)
    diverged = next(p for p in payload["points"] if p["point"]["step"] == later.step)
    assert diverged["diverged"].startswith(f"replay diverged at step {later.step}: observation")
    assert "1 of them re-sampled" in proc.stdout
    # the rerun reads every fork back, the diverged one included, and draws the same replacement
    again = fastslow(*args, "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert result(out) == payload


def test_a_parent_played_on_the_jvms_own_hash_codes_is_named_up_front(parent: Path, tmp_path: Path) -> None:
    """A run made before ``env.hash_codes`` existed (its headers lack it) was played on the JVM's own
    identity hash codes: its forks may not replay, and the command says so before the first fork, and
    whatever diverges is re-sampled (how many diverge here depends on the JVM: only the bookkeeping is
    asserted)."""
    run = _copy_parent(parent, tmp_path / "old")
    for log in (run / "events").glob("*.jsonl"):

        def drop_setting(event: dict[str, Any]) -> dict[str, Any]:
            if event["event"] == "episode_start":
                event["config"]["env"].pop("hash_codes")
            return event

        _edit_log(log, drop_setting)
    out = tmp_path / "attr"
    proc = fastslow("attribute", str(run), "--mechanism", "gate-drop", "--limit", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    note = " ".join(proc.stderr.split())
    assert f"note: {run} was played on the JVM's own identity hash codes (env.hash_codes: default)" in note
    assert "the next of" in note and "seeded draws replaces each" in note
    payload = result(out)
    assert payload["replay_caveat"] and "env.hash_codes: default" in payload["replay_caveat"]
    assert payload["tried"] == 1 + len(payload["replaced"])
    assert payload["diverged"] >= len(payload["replaced"])
    names = {f"{p['point']['episode']}-at{p['point']['step'] + 1:03d}": p for p in payload["points"]}
    assert all(names[swap["point"]]["diverged"] for swap in payload["replaced"])
