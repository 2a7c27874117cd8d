"""ScienceWorld adapter: one named StepResult per step, valid actions fetched in bulk (paper §4).

The stock ``ScienceWorldEnv.step`` copies the ~1-3k valid actions across py4j one element at a time
(~70 ms of its ~84 ms). Here the JVM writes the list to a file in /dev/shm with one py4j call and
Python reads it back in one go (~1 ms); ``fastslow bench env`` checks that observations, scores and
valid-action sets are identical to the stock wrapper's.

JVM lifecycle: started lazily on the first ``reset``, closed by ``close()`` or at interpreter exit,
and replaced on the next ``reset`` if it died. Every py4j call has a read timeout, so a hung or dead
JVM ends the episode in flight with ``EnvError`` instead of hanging the run.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastslow.env.tasks import TaskInfo, get_task
from fastslow.errors import EnvError
from fastslow.events import EndState

SUCCESS_SCORE = 100


@dataclass(frozen=True)
class StepResult:
    """Everything the agent sees after ``reset`` or ``step``."""

    observation: str
    score: int
    """Current score, 0-100; -100 once the task has failed."""
    reward: int
    """Score change caused by this step."""
    moves: int
    """ScienceWorld's move counter."""
    steps: int
    """Env steps taken in this episode (``reset`` is step 0)."""
    look: str
    inventory: str
    task_description: str
    valid_actions: tuple[str, ...]
    end: EndState

    @property
    def done(self) -> bool:
        return self.end is not EndState.RUNNING


def _jar_path() -> str:
    from scienceworld.constants import JAR_PATH

    return str(JAR_PATH)


class _Jvm:
    """One ScienceWorld JVM behind a py4j gateway, plus the shm file it writes valid actions into."""

    def __init__(self, timeout_s: float) -> None:
        from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

        jar = _jar_path()
        port, proc = launch_gateway(
            classpath=jar,
            die_on_exit=True,
            cwd=os.path.dirname(jar),
            return_proc=True,
        )
        self.proc: subprocess.Popen[bytes] = proc
        self.gateway = JavaGateway(
            gateway_parameters=GatewayParameters(port=port, auto_field=True, read_timeout=timeout_s),
            java_process=proc,
        )
        jvm = self.gateway.jvm
        self.server: Any = jvm.scienceworld.runtime.pythonapi.PythonInterface()
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        fd, name = tempfile.mkstemp(prefix="fastslow-valid-", suffix=".txt", dir=shm)
        os.close(fd)
        self.valid_path = Path(name)
        self._files = jvm.java.nio.file.Files
        self._jpath = jvm.java.nio.file.Paths.get(name, self.gateway.new_array(jvm.String, 0))
        self._utf8 = jvm.java.nio.charset.StandardCharsets.UTF_8
        self._no_opts = self.gateway.new_array(jvm.java.nio.file.OpenOption, 0)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def valid_actions(self) -> tuple[str, ...]:
        """The valid-action list, written by Java to shm in one call and read in bulk."""
        ref = self.server.getValidActionObjectCombinations()
        self._files.write(self._jpath, ref, self._utf8, self._no_opts)
        text = self.valid_path.read_text(encoding="utf-8")
        actions = text.split("\n")
        if actions and actions[-1] == "":
            actions.pop()
        if len(actions) != ref.size():
            # An action containing a newline would break the framing; fall back to the slow copy.
            return tuple(str(a) for a in ref)
        return tuple(actions)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.gateway.shutdown()
        if self.proc.poll() is None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.valid_path.unlink(missing_ok=True)


_LIVE_ENVS: weakref.WeakSet[ScienceWorldAdapter] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for env in list(_LIVE_ENVS):
        env.close()


class ScienceWorldAdapter:
    """The ``Env`` of the agent loop: ``reset(task, variation)`` and ``step(action)`` -> StepResult."""

    def __init__(self, simplification: str = "easy", step_limit: int = 300, jvm_timeout_s: float = 120.0):
        self.simplification = simplification
        self.step_limit = step_limit
        self.jvm_timeout_s = jvm_timeout_s
        self._jvm: _Jvm | None = None
        self._task: TaskInfo | None = None
        self._variation = -1
        self._steps = 0
        self._last_score = 0
        self._gold: tuple[str, ...] = ()
        _LIVE_ENVS.add(self)

    # -- lifecycle -------------------------------------------------------------------------------
    def _ensure_jvm(self) -> _Jvm:
        if self._jvm is not None and not self._jvm.alive():
            self._jvm.close()
            self._jvm = None
        if self._jvm is None:
            self._jvm = _Jvm(self.jvm_timeout_s)
        return self._jvm

    @property
    def jvm_pid(self) -> int | None:
        return self._jvm.pid if self._jvm is not None else None

    def close(self) -> None:
        if self._jvm is not None:
            self._jvm.close()
            self._jvm = None

    def __enter__(self) -> ScienceWorldAdapter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        """Run one JVM call; any py4j failure becomes EnvError and the JVM is discarded."""
        from py4j.protocol import Py4JError

        try:
            return fn(*args)
        except (Py4JError, OSError, ConnectionError) as exc:
            jvm, self._jvm = self._jvm, None
            if jvm is not None:
                jvm.close()
            raise EnvError(f"ScienceWorld JVM failed during {what}: {type(exc).__name__}: {exc}") from exc

    # -- episode ---------------------------------------------------------------------------------
    @property
    def task(self) -> TaskInfo:
        if self._task is None:
            raise EnvError("no episode loaded: call reset() first")
        return self._task

    @property
    def variation(self) -> int:
        return self._variation

    @property
    def gold_actions(self) -> tuple[str, ...]:
        """Gold action sequence of the current variation (only if reset(..., gold=True))."""
        return self._gold

    def reset(self, task: int | str, variation: int, *, gold: bool = False) -> StepResult:
        info = get_task(task)
        info.check_variation(variation)
        jvm = self._ensure_jvm()
        self._call("load", jvm.server.load, info.name, variation, self.simplification, gold)
        self._gold = tuple(self._call("gold path", jvm.server.getGoldActionSequence)) if gold else ()
        self._task, self._variation = info, variation
        self._steps, self._last_score = 0, 0
        # Same as the stock wrapper: the first observation is "look around" after a reset.
        self._call("reset", jvm.server.reset)
        observation = self._call("step", jvm.server.step, "look around")
        result = self._observe(observation)
        return result

    def step(self, action: str) -> StepResult:
        jvm = self._jvm
        if jvm is None or self._task is None:
            raise EnvError("no episode loaded (or the JVM died): call reset() first")
        observation = self._call("step", jvm.server.step, action)
        self._steps += 1
        return self._observe(observation)

    def _observe(self, observation: str) -> StepResult:
        jvm = self._jvm
        assert jvm is not None
        server = jvm.server
        score = round(100 * self._call("score", server.getScore))
        completed = bool(self._call("completed", server.getCompleted))
        moves = int(self._call("moves", server.getNumMoves))
        reward, self._last_score = score - self._last_score, score
        if score < 0:
            end = EndState.FAILURE
        elif score >= SUCCESS_SCORE:
            end = EndState.SUCCESS
        elif completed:
            end = EndState.FAILURE
        elif self._steps >= self.step_limit:
            end = EndState.STEP_LIMIT
        else:
            end = EndState.RUNNING
        return StepResult(
            observation=str(observation),
            score=score,
            reward=reward,
            moves=moves,
            steps=self._steps,
            look=str(self._call("look", server.freeActionLook)),
            inventory=str(self._call("inventory", server.freeActionInventory)),
            task_description=str(self._call("task description", server.freeActionTaskDesc)),
            valid_actions=self._call("valid actions", jvm.valid_actions),
            end=end,
        )
