"""ScienceWorld adapter: one named StepResult per step, valid actions fetched in bulk (paper §4).

The stock ``ScienceWorldEnv.step`` makes one py4j round trip per field and copies the ~1-3k valid
actions one element at a time (~70 ms of its ~84 ms). Here a small Java helper (``java/FastStep.java``,
compiled once with javac into the user cache) steps and reads every field on the JVM side, writes them
to one file in /dev/shm, and Python reads it in one go: one round trip per step. Without javac the
adapter falls back to per-field calls with the valid list still written to shm in bulk.
``fastslow bench env`` checks that observations, scores and valid-action sets are identical to the
stock wrapper's.

A reset is one round trip too: the helper loads the task and takes the first "look around" step in
one call. The stock wrapper's ``reset`` after ``load`` is skipped: the simulator's reset only loads the
same task again, so calling it would build every world twice (and generate a requested gold path
twice).

The adapter is the environment's dynamics only: it knows nothing of step limits. The episode step limit
is ``env.wrappers.TimeLimit`` around it (the runner wraps it with ``config.env.step_limit``).

JVM lifecycle: started lazily on the first ``reset``, closed by ``close()`` or at interpreter exit,
and replaced on the next ``reset`` if it died. Every py4j call has a read timeout, so a hung or dead
JVM ends the episode in flight with ``EnvError`` instead of hanging the run.

Determinism (``hash_codes``): ScienceWorld 1.2.3 keeps every object's contents, the portals of a room
and most intermediate results in Scala hash sets of objects that do not override ``hashCode``, so
everything that iterates them - the order of objects in ``look around``, of ambiguity options and of
valid actions, the order in which objects tick (bees draw from the simulator's seeded ``Random`` in
that order), heat transfer - follows the JVM's identity hash codes. The JVM's default generator
(``-XX:hashCode=5``, a per-thread xor-shift stream) hands codes out lazily in request order, so the
texts depend on everything the JVM did before, and even two fresh JVMs playing the same actions drift
apart: the thread serving py4j calls draws a timing-dependent number of codes in some steps (the
simulation's state was identical just before; with ``-XX:-BackgroundCompilation`` six fresh JVMs did
not drift), and one code shifted reorders a set (docs/forks.md). ``"constant"`` (the default) starts the
JVM with ``-XX:hashCode=2``: every identity hash code is 1, so each set iterates in the order of its own
insertions and removals, a function of the task, variation and actions only (no JVM history, no timing).
``"default"`` keeps the JVM's own generator (runs made before the option existed).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fastslow.core.step import StepResult as StepResult  # the core type, re-exported
from fastslow.env.scienceworld.semantics import SUCCESS_SCORE as SUCCESS_SCORE  # one definition, re-exported
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.tasks import TaskInfo
from fastslow.errors import EnvError
from fastslow.events import EndState

log = logging.getLogger(__name__)


def _jar_path() -> str:
    from scienceworld.constants import JAR_PATH

    return str(JAR_PATH)


_JAVA_SOURCE = Path(__file__).parent / "java" / "fastslow" / "FastStep.java"


HashCodes = Literal["constant", "default"]
HASH_CODES: tuple[HashCodes, ...] = ("constant", "default")


def jvm_options(hash_codes: HashCodes = "constant") -> list[str]:
    """The JVM options of a ScienceWorld JVM with ``hash_codes`` (module docstring, Determinism)."""
    if hash_codes == "constant":
        # hashCode is an experimental flag of HotSpot (JDK 8 to 21 at least); mode 2 = always 1.
        return ["-XX:+UnlockExperimentalVMOptions", "-XX:hashCode=2"]
    if hash_codes == "default":
        return []
    raise ValueError(f"hash_codes must be one of {', '.join(HASH_CODES)}, not {hash_codes!r}")


@functools.cache
def _java_helper_dir() -> str | None:
    """Compile FastStep.java once into the user cache; None (slower py4j path) if javac is missing."""
    javac = shutil.which("javac")
    if javac is None:
        log.warning("javac not found: using the slower per-field py4j path for ScienceWorld steps")
        return None
    source = _JAVA_SOURCE.read_bytes()
    jar = Path(_jar_path())
    key = hashlib.sha256(source + str(jar.stat().st_size).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fastslow" / "java" / key
    if (cache / "fastslow" / "FastStep.class").is_file():
        return str(cache)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=cache.parent))
    proc = subprocess.run(
        [javac, "-nowarn", "-d", str(tmp), "-cp", str(jar), str(_JAVA_SOURCE)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        log.warning(
            "could not compile %s (%s): using the slower py4j path", _JAVA_SOURCE, proc.stderr.strip()
        )
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    try:
        tmp.rename(cache)  # atomic: concurrent workers either win or find the finished directory
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return str(cache)


@dataclass(frozen=True)
class _RawState:
    observation: str
    score: float
    completed: bool
    moves: int
    look: str
    inventory: str
    valid_actions: tuple[str, ...]


class _Jvm:
    """One ScienceWorld JVM behind a py4j gateway, plus the shm file it writes each step's state into."""

    def __init__(
        self, timeout_s: float, java_helper: bool = True, hash_codes: HashCodes = "constant"
    ) -> None:
        from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

        jar = _jar_path()
        helper_dir = _java_helper_dir() if java_helper else None
        # No other options, on purpose. With hash_codes="default", ScienceWorld orders ambiguity options
        # (and other object lists) by the JVM's identity hash codes, and any option that changes class
        # loading or the JIT reorders them (a class-data archive, -XX:TieredStopAtLevel=1, even
        # -Xshare:off put the bowl's orange first in `move orange to table` of boil variation 0; the
        # default puts the carried one first). With "constant" the order no longer depends on them.
        port, proc = launch_gateway(
            classpath=jar if helper_dir is None else f"{jar}{os.pathsep}{helper_dir}",
            javaopts=jvm_options(hash_codes),
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
        self.fast: Any = jvm.fastslow.FastStep if helper_dir is not None else None
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        fd, name = tempfile.mkstemp(prefix="fastslow-state-", suffix=".txt", dir=shm)
        os.close(fd)
        self.state_path = Path(name)
        self._files = jvm.java.nio.file.Files
        self._jpath = jvm.java.nio.file.Paths.get(name, self.gateway.new_array(jvm.String, 0))
        self._utf8 = jvm.java.nio.charset.StandardCharsets.UTF_8
        self._no_opts = self.gateway.new_array(jvm.java.nio.file.OpenOption, 0)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def advance(self, action: str) -> _RawState:
        """Step, then read the state in the stock wrapper's order (score, completed, moves, look, inventory,
        valid actions). With the Java helper this is one py4j round trip plus one file read."""
        if self.fast is None:
            return self._read_fields(str(self.server.step(action)))
        n_valid = int(self.fast.step(self.server, action, str(self.state_path)))
        fields = self.state_path.read_text(encoding="utf-8").split("\0")
        if len(fields) != 7:
            raise EnvError(f"unexpected state framing from the JVM ({len(fields)} fields) after {action!r}")
        return self._parse_state(fields, n_valid)

    def start(
        self, task: str, variation: int, simplification: str, gold: bool
    ) -> tuple[str, tuple[str, ...], _RawState]:
        """Load a task and take the first "look around" step: (task description, gold path, state).

        No ``server.reset()`` after the load (the stock wrapper's): it only loads the task again. With the
        Java helper this is one py4j round trip plus one file read."""
        server = self.server
        gold_path: tuple[str, ...] = ()
        if self.fast is None:
            server.load(task, variation, simplification, gold)
            if gold:
                gold_path = tuple(str(a) for a in server.getGoldActionSequence())
            description = str(server.freeActionTaskDesc())
            return description, gold_path, self._read_fields(str(server.step("look around")))
        n_valid = int(self.fast.reset(server, task, variation, simplification, gold, str(self.state_path)))
        fields = self.state_path.read_text(encoding="utf-8").split("\0")
        if len(fields) != 9:
            raise EnvError(
                f"unexpected state framing from the JVM ({len(fields)} fields) after loading {task}"
            )
        description, gold_blob = fields[0], fields[1]
        if gold:
            count, *actions = gold_blob.split("\n")
            actions.pop()  # the list ends with a newline
            if len(actions) != int(count):
                # An action containing a newline would break the framing; take the slow copy instead.
                actions = [str(a) for a in server.getGoldActionSequence()]
            gold_path = tuple(actions)
        return description, gold_path, self._parse_state(fields[2:], n_valid)

    def _parse_state(self, fields: list[str], n_valid: int) -> _RawState:
        observation, score, completed, moves, look, inventory, blob = fields
        valid = blob.split("\n")
        valid.pop()  # the list ends with a newline
        if len(valid) != n_valid:
            # An action containing a newline would break the framing; take the slow copy instead.
            valid = [str(a) for a in self.server.getValidActionObjectCombinations()]
        return _RawState(
            observation, float(score), completed == "true", int(moves), look, inventory, tuple(valid)
        )

    def _read_fields(self, observation: str) -> _RawState:
        """The per-field py4j path (no javac), in the stock wrapper's order."""
        server = self.server
        return _RawState(
            observation=observation,
            score=float(server.getScore()),
            completed=bool(server.getCompleted()),
            moves=int(server.getNumMoves()),
            look=str(server.freeActionLook()),
            inventory=str(server.freeActionInventory()),
            valid_actions=self.valid_actions(),
        )

    def valid_actions(self) -> tuple[str, ...]:
        """The valid-action list, written by Java to shm in one call and read in bulk."""
        ref = self.server.getValidActionObjectCombinations()
        self._files.write(self._jpath, ref, self._utf8, self._no_opts)
        actions = self.state_path.read_text(encoding="utf-8").split("\n")
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
        self.state_path.unlink(missing_ok=True)


_LIVE_ENVS: weakref.WeakSet[ScienceWorldAdapter] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for env in list(_LIVE_ENVS):
        env.close()


class ScienceWorldAdapter:
    """The ``Env`` of the agent loop: ``reset(task, variation)`` and ``step(action)`` -> StepResult."""

    def __init__(
        self,
        simplification: str = "easy",
        jvm_timeout_s: float = 120.0,
        java_helper: bool = True,
        hash_codes: HashCodes = "constant",
    ):
        jvm_options(hash_codes)  # an unknown value is refused here, not at the first reset
        self.simplification = simplification
        self.java_helper = java_helper
        self.jvm_timeout_s = jvm_timeout_s
        self.hash_codes: HashCodes = hash_codes
        self._jvm: _Jvm | None = None
        self._task: TaskInfo | None = None
        self._variation = -1
        self._steps = 0
        self._last_score = 0
        self._gold: tuple[str, ...] = ()
        self._task_description = ""
        _LIVE_ENVS.add(self)

    # -- lifecycle -------------------------------------------------------------------------------
    def _ensure_jvm(self) -> _Jvm:
        if self._jvm is not None and not self._jvm.alive():
            self._jvm.close()
            self._jvm = None
        if self._jvm is None:
            from py4j.protocol import Py4JError

            try:
                self._jvm = _Jvm(self.jvm_timeout_s, self.java_helper, self.hash_codes)
            except (Py4JError, OSError, ConnectionError) as exc:
                # A JVM that does not come up (an overloaded machine, a killed process) ends the episode
                # with a typed error the worker retries, as a JVM that dies later does.
                raise EnvError(f"ScienceWorld JVM failed to start: {type(exc).__name__}: {exc}") from exc
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
        """Load ``task``/``variation`` and return the state after the stock wrapper's first "look around"
        (step 0). ``gold``: also generate ScienceWorld's gold path (``gold_actions``; costs ~0.3-10 s)."""
        info = get_task(task)
        info.check_variation(variation)
        jvm = self._ensure_jvm()
        # The task description is constant for the episode: read once here, not on every step as the
        # stock wrapper does.
        description, gold_path, raw = self._call(
            "reset", jvm.start, info.name, variation, self.simplification, gold
        )
        self._task, self._variation = info, variation
        self._gold, self._task_description = gold_path, description
        self._steps, self._last_score = 0, 0
        return self._result(raw)

    def step(self, action: str) -> StepResult:
        jvm = self._jvm
        if jvm is None or self._task is None:
            raise EnvError("no episode loaded (or the JVM died): call reset() first")
        self._steps += 1
        return self._result(self._call("step", jvm.advance, action))

    def _result(self, raw: _RawState) -> StepResult:
        score = round(100 * raw.score)
        reward, self._last_score = score - self._last_score, score
        if score < 0:
            end = EndState.FAILURE
        elif score >= SUCCESS_SCORE:
            end = EndState.SUCCESS
        elif raw.completed:
            end = EndState.FAILURE
        else:
            end = EndState.RUNNING
        return StepResult(
            observation=raw.observation,
            score=score,
            reward=reward,
            moves=raw.moves,
            steps=self._steps,
            look=raw.look,
            inventory=raw.inventory,
            task_description=self._task_description,
            valid_actions=raw.valid_actions,
            end=end,
        )
