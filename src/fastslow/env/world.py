"""The world seam: which text world a run plays, and what the evaluation asks of it.

A *world* is a family of text games fastslow can play: ScienceWorld (the paper's) or TextWorldExpress.
``EnvConfig.world`` names a run's; a log header (``EpisodeStart.world``) names the world its episode was
played in, and a header without one is ScienceWorld's (every log written before a second world existed).
Everything the evaluation does that depends on the world goes through a ``World``:

- ``make_env``: the adapter (``Env``) a worker, ``run``, a fork plays on;
- ``tasks`` / ``task``: the task table as ``TaskInfo`` records (id, name, variations per split, gold-path
  lengths of the test episodes, hence the Short/Medium/Long group), for headers, metrics, report, viewer;
- ``select``: the episodes of a named set narrowed by ``--tasks`` / ``--variations`` / ``--limit-per-task``;
- ``step_limit``: an episode's env-step limit given the configured one;
- ``family``: the task family AMM's records carry; ``packages``: what the header's ``versions`` lists;
- ``replay_caveat``: why an episode played with given settings may not replay exactly (forks,
  ``attribute``).
- ``bench_env``, ``sample_text``, ``rebuild_task_table``: what ``fastslow bench env``, ``bench memory``
  and ``data tasks`` ask of the world (``fastslow.env.bench``).
- ``task_procedures``, ``focus_judge``: the world's hand-written task logic and task-specific focus
  rules (``procedures.enabled``), ``rebuild_knowledge`` the ``fastslow data`` commands of their
  knowledge files; None / a ``UsageError`` where a world has none.

Each world implements it in its own package (``fastslow.env.scienceworld.world`` beside ScienceWorld's
modules, ``fastslow.env.textworldexpress.world``); ``get_world`` imports that package only when the
world is first asked for, so a ScienceWorld run never imports TextWorldExpress (nor the reverse).
What the *agent* may know of a world (verbs, objects, rooms, feedback classes) is its ``semantics``
(``fastslow.core.semantics.WorldSemantics``), which every episode's ``Trajectory`` carries.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Self

from fastslow.core.semantics import WorldSemantics
from fastslow.env.config import DEFAULT_WORLD
from fastslow.env.wrappers import Env
from fastslow.errors import UsageError

if TYPE_CHECKING:
    from fastslow.core.authors import Demo
    from fastslow.core.focus import FocusJudge
    from fastslow.core.procedures import TaskProcedures
    from fastslow.env.bench import AdapterBench, SampleText
    from fastslow.env.config import EnvConfig
    from fastslow.env.episodes import Episode
    from fastslow.env.tasks import TaskInfo

WORLD_MODULES: dict[str, str] = {
    "scienceworld": "fastslow.env.scienceworld.world",
    "textworldexpress": "fastslow.env.textworldexpress.world",
}
"""Where each world's ``World`` lives: the module's ``WORLD`` (the keys are ``EnvConfig.world``'s
values)."""


class WorldEnv(Env, Protocol):
    """The ``Env`` a world's ``make_env`` returns: the episode loop's, plus the JVM it runs on; a context
    manager that closes it (stops its JVM) on exit."""

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...

    @property
    def jvm_pid(self) -> int | None:
        """The process id of the adapter's JVM; None before the first reset, after ``close`` or after
        the JVM died (a worker's JVM history, ``EpisodeStart.jvm``, starts again when it changes)."""
        ...


class World(Protocol):
    """What the evaluation needs of a world (module docstring). Implementations hold no episode
    state: one instance serves every run of the process."""

    @property
    def name(self) -> str:
        """``EnvConfig.world``'s value for it (``scienceworld``, ``textworldexpress``)."""
        ...

    @property
    def semantics(self) -> WorldSemantics:
        """What the world's text means to the agent (``fastslow.core.semantics``)."""
        ...

    @property
    def packages(self) -> tuple[str, ...]:
        """The distributions whose versions an episode header records (``EpisodeStart.versions``)."""
        ...

    def make_env(self, env: EnvConfig) -> WorldEnv:
        """A new adapter with ``env``'s settings; its JVM starts at the first reset."""
        ...

    def wrap(self, env: Env, settings: EnvConfig) -> Env:
        """``env`` (an adapter of this world) under the world's own wrappers for ``settings`` (ScienceWorld:
        the paper authors' valid-action filter with ``env.valid_filter: authors``); the runner stacks its
        ``TimeLimit`` on top."""
        ...

    def tasks(self) -> Sequence[TaskInfo]:
        """Every task, in id order (``tasks()[i].task_id == i``)."""
        ...

    def task(self, task: int | str) -> TaskInfo:
        """A task by id (int or digit string) or name; ``UsageError`` for an unknown one."""
        ...

    def family(self, task_id: int) -> str:
        """The family of related tasks a task belongs to (AMM's ``MemoryRecord.task_family``)."""
        ...

    def select(
        self,
        set_name: str,
        tasks: str | None = None,
        variations: str | None = None,
        limit_per_task: int | None = None,
    ) -> list[Episode]:
        """The episodes of a named set (test, dev, warmup, train, ...), narrowed by a task selection
        (``0,3,5-8``; names too where the world allows), a variation selection and a per-task limit.
        Bad input or an empty selection: ``UsageError``."""
        ...

    def step_limit(self, task_id: int, configured: int) -> int:
        """The env-step limit of an episode of ``task_id`` under ``env.step_limit = configured``."""
        ...

    def sage_demos(self, task_id: int) -> tuple[Demo, ...]:
        """Solved train episodes of a task as plain ``action -> observation`` lines for Sage's
        SwiftSage-shaped prompt (``controller.sage.demo``); () where the world has none (ScienceWorld:
        its demos are the authors' profile's, ``WorldSemantics.authors.demos``)."""
        ...

    def replay_caveat(self, env: EnvConfig) -> str | None:
        """Why an episode played with ``env``'s settings may answer differently when its actions are
        replayed on a fresh process (a fork's prefix), in one clause; None when it replays exactly."""
        ...

    def bench_env(self, tasks: str | None, steps: int | None, say: Callable[[str], None]) -> AdapterBench:
        """``fastslow bench env``: the world's adapter against its package's own API on the same actions
        in one process (paper §4), ``say`` called with each progress and summary line (one not indented
        heads the lines after it). ``tasks`` and ``steps`` are the command's options (None: not given;
        ScienceWorld takes tasks, TextWorldExpress steps); one the world does not take is a
        ``UsageError``."""
        ...

    @property
    def sample_text(self) -> SampleText | None:
        """Text shaped like the world's for synthetic memory records (``fastslow bench memory``); None
        where the world offers none (TextWorldExpress)."""
        ...

    def task_procedures(self) -> TaskProcedures | None:
        """A new instance of the world's hand-written task logic (``procedures.enabled``: task procedures,
        judgements and their vetoes, driven by ``procedures.hook.ProcedureHook``); None where the world
        has none (TextWorldExpress: the switch changes nothing there)."""
        ...

    def focus_judge(self) -> FocusJudge | None:
        """The world's task-specific focus rules Gate-1 and the Critic receive with ``procedures.enabled``
        (``core.focus.FocusJudge``); None where it has none (TextWorldExpress has no focus)."""
        ...

    def rebuild_knowledge(
        self,
        name: str,
        out: Path | None,
        tasks: Sequence[int] | None,
        per_task: int | None,
        say: Callable[[str], None],
        commit: str | None,
    ) -> tuple[Path, dict[str, int]]:
        """``fastslow data <name>`` (substances, paints, circuits, focus-budgets): rebuild a knowledge file
        of the world's task logic from its train gold paths, write it to ``out`` (None: the packaged
        file), ``say`` called with each progress line; the path written and the counts the command
        prints. ``tasks`` / ``per_task``: the command's options (None: the file's defaults). A
        ``UsageError`` where the world has no such file (TextWorldExpress has none)."""
        ...

    def rebuild_task_table(self, out: Path | None, say: Callable[[str], None]) -> Path:
        """``fastslow data tasks``: recompute the world's task table from its simulator and write it to
        ``out`` (None: the packaged file), ``say`` called once per task; the path written. A
        ``UsageError`` where the task table is not built this way (TextWorldExpress: its tasks are
        ``benchmark.yaml``'s games)."""
        ...


@cache
def get_world(name: str = DEFAULT_WORLD) -> World:
    """The world called ``name``, its package imported on first use; ``UsageError`` for an unknown
    name (a log header of a world this fastslow does not have)."""
    module = WORLD_MODULES.get(name)
    if module is None:
        raise UsageError(f"unknown world '{name}': this fastslow plays {', '.join(WORLD_MODULES)}")
    world: World = importlib.import_module(module).WORLD
    return world


def require_scienceworld(env: EnvConfig, what: str) -> None:
    """Refuse, in one line, a command that only exists for ScienceWorld (its training data, Swift's
    training, its benchmarks) when the config names another world."""
    if env.world != "scienceworld":
        raise UsageError(
            f"{what} exists for ScienceWorld only so far, and the config plays env.world={env.world} "
            "(the training data and demonstrations of other worlds are not built yet)"
        )
