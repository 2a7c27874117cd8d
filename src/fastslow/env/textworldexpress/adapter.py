"""TextWorldExpress adapter: the ``Env`` of the agent loop on TWX games (``textworld-express==1.1.0``).

``reset(task, variation)`` loads an episode of the benchmark (``benchmark.yaml``): ``task`` is a game
(its index in the benchmark's game list, or its name), ``variation`` a TWX seed, whose range names its
fold (train 0-999, dev 10000-10999, test 20000-20999; ``benchmark.fold_of``). ``step(action)`` returns
the same ``StepResult`` as the ScienceWorld adapter.

**Scores.** TWX reports a score in 0-1 (``score``) and two flags. The ``StepResult`` holds:

- ``score``: ``round(100 * score)`` while the episode runs (twc's score can go down: an item taken back
  out of its place); 100 at ``tasksuccess`` (``EndState.SUCCESS``); -100 at ``taskfailure`` or a negative
  TWX score (``EndState.FAILURE``). TWX's failure is a flag: cookingworld keeps its partial score at
  failure (e.g. 0.1 after eating an ingredient), the other games drop to -1. Mapping every failure to
  fastslow's -100, as ScienceWorld's failed tasks end, makes both score conventions work unchanged
  (``eval.records.EpisodeResult``): the paper's keeps the best non-negative score reached before the
  failure, the strict one counts the failure as 0.
- ``reward``: the change of that score; ``moves``: env steps taken (TWX has no move counter of its own:
  the stock wrapper's ``numMoves`` counts its steps, the same number).
- ``look``, ``inventory``, ``valid_actions``: TWX's, every step, in TWX's order (deterministic: the same
  on every JVM and after any history, checked by the tests; as TWX lists them, so Simon says can name
  an action twice). The task description is read once per reset: it is constant, and the stock
  wrapper spends a second py4j call on it every step.

An episode ends at the first step with a flag. TWX simulates on past it (twc's gold path runs on past
its success; arithmetic's failure flag clears on the next step), so ``step`` after the end raises
``EnvError``: the flags after the end mean nothing.

**Speed.** One py4j call per step: the server's JSON step (``stepJSON``), parsed with orjson. A reset
is one call to generate the game and one for the task description (plus the gold path on request).

**One JVM, many games.** The adapter starts one JVM (lazily, at the first reset) and keeps one TWX
``PythonInterface`` per game in it, loaded once with the game's parameters: a reset of another game
switches interface, a reset of the same game generates the seed's game (``load`` costs ~20 ms a game,
generating one 0.3-3 ms). A worker plays all its episodes, of every game, on one adapter and JVM;
episodes played so are identical, step by step, to the same episodes each on a fresh JVM (the tests;
measured once on 40 dev episodes, 5 per game, 914 random steps: 40 of 40 identical, 1.6 s on one JVM
against 34 s with a JVM per episode).

**Gold paths.** ``reset(..., gold=True)`` sets ``gold_actions`` to the benchmark's cached path
(``Benchmark.gold_path``, ``gold_source == "cache"``) when the episode is cached; otherwise TWX
generates one (a random walk: it can differ between calls) and the adapter replays it once to cut it
at its first success (``gold_source == "generated"``), then regenerates the episode for play.

**Errors.** Any py4j failure (the JVM died, hung past ``jvm_timeout_s``, or threw) becomes ``EnvError``
and the JVM is discarded; the next ``reset`` starts a new one. Bad input (unknown game, a seed in no
fold, parameters TWX refuses) is a ``UsageError``.
"""

from __future__ import annotations

import atexit
import contextlib
import subprocess
import weakref
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from fastslow.core.step import StepResult
from fastslow.env.textworldexpress.benchmark import Benchmark, Fold, GameSpec, fold_of, load_benchmark
from fastslow.env.textworldexpress.semantics import FAILURE_SCORE, SUCCESS_SCORE
from fastslow.errors import EnvError, UsageError
from fastslow.events import EndState


def jar_path() -> str:
    """The TWX server JAR shipped inside the ``textworld_express`` wheel."""
    from textworld_express.constants import JAR_PATH

    return str(JAR_PATH)


@dataclass(frozen=True)
class _Raw:
    """One JSON state of TWX's server, the fields fastslow reads."""

    observation: str
    look: str
    inventory: str
    valid_actions: tuple[str, ...]
    score: float
    success: bool
    failure: bool


def _parse(payload: str) -> _Raw:
    try:
        data = orjson.loads(payload)
        return _Raw(
            observation=data["observation"],
            look=data["look"],
            inventory=data["inventory"],
            valid_actions=tuple(data["validActions"]),
            score=float(data["score"]),
            success=bool(data["tasksuccess"]),
            failure=bool(data["taskfailure"]),
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise EnvError(f"unexpected state from the TextWorldExpress JVM: {payload[:200]!r}") from exc


class _Jvm:
    """One TWX JVM behind a py4j gateway, with one loaded ``PythonInterface`` per game."""

    def __init__(self, timeout_s: float) -> None:
        import os

        from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

        jar = jar_path()
        # No callback server (the stock wrapper starts one; nothing calls back into Python) and the
        # JVM's default options.
        port, proc = launch_gateway(
            classpath=jar, die_on_exit=True, cwd=os.path.dirname(jar), return_proc=True
        )
        self.proc: subprocess.Popen[bytes] = proc
        self.gateway = JavaGateway(
            gateway_parameters=GatewayParameters(port=port, read_timeout=timeout_s), java_process=proc
        )
        self._games: dict[tuple[str, str], Any] = {}
        self._join: Any = self.gateway.jvm.java.lang.String.join

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def new_interface(self) -> Any:
        """A fresh, unloaded ``PythonInterface`` in this JVM."""
        return self.gateway.jvm.textworldexpress.runtime.PythonInterface()

    def interface(self, spec: GameSpec) -> Any:
        """The game's ``PythonInterface``, created and loaded with its parameters on first use."""
        key = (spec.name, spec.param_string)
        server = self._games.get(key)
        if server is None:
            server = self.new_interface()
            message = str(server.load(spec.name, spec.param_string))
            if message:
                raise UsageError(
                    f"TextWorldExpress refused {spec.name} '{spec.param_string}': {message.strip()}"
                )
            self._games[key] = server
        return server

    def joined(self, java_list: Any) -> tuple[str, ...]:
        """A Java list of strings in one py4j call (iterating it would cost one call per element)."""
        size = int(java_list.size())
        if size == 0:
            return ()
        items = str(self._join("\n", java_list)).split("\n")
        if len(items) != size:  # an item with a newline: take the slow copy
            return tuple(str(a) for a in java_list)
        return tuple(items)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.gateway.shutdown()
        if self.proc.poll() is None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass


_LIVE: weakref.WeakSet[TextWorldExpressAdapter] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for env in list(_LIVE):
        env.close()


class TextWorldExpressAdapter:
    """The ``Env`` of the agent loop on a TWX benchmark (module docstring: scores, speed, JVM, gold)."""

    def __init__(self, benchmark: Benchmark | None = None, jvm_timeout_s: float = 60.0) -> None:
        self.benchmark = benchmark if benchmark is not None else load_benchmark()
        self.jvm_timeout_s = jvm_timeout_s
        self._jvm: _Jvm | None = None
        self._server: Any = None
        self._game: GameSpec | None = None
        self._game_id = -1
        self._seed = -1
        self._steps = 0
        self._last_score = 0
        self._ended = True
        self._gold: tuple[str, ...] = ()
        self._gold_source: Literal["cache", "generated", ""] = ""
        self._task_description = ""
        _LIVE.add(self)

    # -- lifecycle -------------------------------------------------------------------------------
    def _ensure_jvm(self) -> _Jvm:
        if self._jvm is not None and not self._jvm.alive():
            self._jvm.close()
            self._jvm = None
        if self._jvm is None:
            from py4j.protocol import Py4JError

            try:
                self._jvm = _Jvm(self.jvm_timeout_s)
            except (Py4JError, OSError, ConnectionError) as exc:
                raise EnvError(f"TextWorldExpress JVM failed to start: {type(exc).__name__}: {exc}") from exc
        return self._jvm

    @property
    def jvm_pid(self) -> int | None:
        """The process id of the adapter's JVM, None before the first reset or after ``close``."""
        return self._jvm.pid if self._jvm is not None else None

    def close(self) -> None:
        """Stop the JVM (a later ``reset`` starts a new one)."""
        self._server, self._ended = None, True
        if self._jvm is not None:
            self._jvm.close()
            self._jvm = None

    def __enter__(self) -> TextWorldExpressAdapter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        """Run JVM work; any py4j failure becomes EnvError and the JVM is discarded."""
        from py4j.protocol import Py4JError

        try:
            return fn(*args)
        except (Py4JError, OSError, ConnectionError) as exc:
            detail = _describe(exc)  # before the JVM goes: a Java exception's text is read from it
            jvm, self._jvm, self._server, self._ended = self._jvm, None, None, True
            if jvm is not None:
                jvm.close()
            raise EnvError(f"TextWorldExpress JVM failed during {what}: {detail}") from exc

    # -- episode ---------------------------------------------------------------------------------
    @property
    def game(self) -> GameSpec:
        """The game of the current episode."""
        if self._game is None:
            raise EnvError("no episode loaded: call reset() first")
        return self._game

    @property
    def game_id(self) -> int:
        """The current game's index in the benchmark (-1 before the first reset)."""
        return self._game_id

    @property
    def seed(self) -> int:
        """The current episode's TWX seed (its ``variation``)."""
        return self._seed

    @property
    def fold(self) -> Fold:
        return fold_of(self._seed)

    @property
    def gold_actions(self) -> tuple[str, ...]:
        """Gold path of the current episode, ending at its first success (only after ``reset(...,
        gold=True)``; empty otherwise)."""
        return self._gold

    @property
    def gold_source(self) -> Literal["cache", "generated", ""]:
        """Where ``gold_actions`` came from: the benchmark's cache, TWX's generator, or '' (not asked)."""
        return self._gold_source

    def reset(self, task: int | str, variation: int, *, gold: bool = False) -> StepResult:
        """Start the episode of game ``task`` (id or name) and seed ``variation``; step 0.

        ``gold``: also set ``gold_actions`` (module docstring). ``UsageError`` for an unknown game or a
        seed in no fold, ``EnvError`` if the JVM fails."""
        game_id, spec = self.benchmark.game(task)
        fold = fold_of(variation)
        jvm = self._ensure_jvm()
        self._server, self._ended = None, True  # a failed reset leaves no episode to step
        cached = self.benchmark.gold_path(game_id, variation) if gold else None
        server, raw, description, path = self._call(
            "reset", self._start, jvm, spec, variation, fold, gold and cached is None
        )
        self._server, self._game, self._game_id, self._seed = server, spec, game_id, variation
        self._gold = cached if cached is not None else path
        self._gold_source = ("cache" if cached is not None else "generated") if gold else ""
        self._task_description = description
        self._steps, self._last_score, self._ended = 0, 0, False
        return self._result(raw)

    def _start(
        self, jvm: _Jvm, spec: GameSpec, seed: int, fold: Fold, generate_gold: bool
    ) -> tuple[Any, _Raw, str, tuple[str, ...]]:
        server = jvm.interface(spec)
        path = _generate_gold(jvm, server, seed, fold) if generate_gold else ()
        raw = _parse(str(server.generateNewGameJSON(seed, fold, False)))
        return server, raw, str(server.getTaskDescription()), path

    def generate_gold(self, task: int | str, variation: int) -> tuple[str, ...]:
        """A gold path from TWX's generator for the episode (never the cache), cut at the first step
        that ends it. TWX's gold agent is a random walk: for some games (twc, coin) each call can give
        another path. Leaves no episode loaded (``reset`` before the next ``step``)."""
        _, spec = self.benchmark.game(task)
        fold = fold_of(variation)
        jvm = self._ensure_jvm()
        self._server, self._ended = None, True
        path: tuple[str, ...] = self._call(
            "gold path", lambda: _generate_gold(jvm, jvm.interface(spec), variation, fold)
        )
        return path

    def step(self, action: str) -> StepResult:
        """Send ``action`` as it is (TWX matches its valid actions exactly, case included)."""
        if self._server is None:
            raise EnvError("no episode loaded (or the JVM died): call reset() first")
        if self._ended:
            raise EnvError("the episode has ended: call reset() for the next one")
        self._steps += 1
        payload = self._call("step", self._server.stepJSON, action)
        return self._result(_parse(payload))

    def _result(self, raw: _Raw) -> StepResult:
        if raw.failure or raw.score < 0:
            end, score = EndState.FAILURE, FAILURE_SCORE
        elif raw.success:
            end, score = EndState.SUCCESS, SUCCESS_SCORE
        else:
            end, score = EndState.RUNNING, round(100 * raw.score)
        reward, self._last_score = score - self._last_score, score
        self._ended = end is not EndState.RUNNING
        return StepResult(
            observation=raw.observation,
            score=score,
            reward=reward,
            moves=self._steps,
            steps=self._steps,
            look=raw.look,
            inventory=raw.inventory,
            task_description=self._task_description,
            valid_actions=raw.valid_actions,
            end=end,
        )


def _describe(exc: BaseException) -> str:
    """``TypeName: message`` of a py4j failure; a Java exception's message needs the live gateway."""
    try:
        text = str(exc)
    except Exception:  # the gateway is gone: the Java side's message cannot be fetched
        text = repr(exc.args[0]) if exc.args else ""
    return f"{type(exc).__name__}: {' '.join(text.split())[:500]}"


def _generate_gold(jvm: _Jvm, server: Any, seed: int, fold: Fold) -> tuple[str, ...]:
    """Generate the seed's game with TWX's gold path on ``server`` and replay the path there, cut at the
    first step that ends the episode (its success; after a failure, or with no end at all, the path is
    kept whole for the caller's replay to show). ``server`` is left mid-game: regenerate before play.
    Generating with or without the gold path gives the same game (checked by the tests)."""
    _parse(str(server.generateNewGameJSON(seed, fold, True)))
    path = jvm.joined(server.getGoldActionSequence())
    for i, action in enumerate(path, start=1):
        raw = _parse(str(server.stepJSON(action)))
        if raw.success and not raw.failure:
            return path[:i]
        if raw.failure:
            break
    return path
