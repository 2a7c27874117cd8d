"""The documentation site stays true (issue 52).

- The reference pages are generated (``fastslow.docgen``): a config field added with a docstring appears
  with its key, type, default and description, with no hand edit.
- ``mkdocs build --strict`` builds the site, and fails on a broken link planted in a copy of it.
- The commands shown in the tutorials and how-to guides parse against the Typer app and their
  configurations load; the tutorials' short ones run for real (slow).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from fastslow import docgen
from fastslow.config import load_config
from fastslow.strict import StrictModel

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GUIDES = sorted([*(DOCS / "tutorials").glob("*.md"), *(DOCS / "how-to").glob("*.md")])


# -- generated reference -------------------------------------------------------------------------------


class _Inner(StrictModel):
    """A nested section."""

    brand_new_knob: float = 0.25
    """How far the new knob turns (added by the test)."""


class _Outer(StrictModel):
    """A configuration with one more section than the code has."""

    widget: _Inner = _Inner()
    """The widget section."""
    label: str | None = None
    """A top-level key."""


def test_a_new_config_field_with_a_docstring_appears_in_the_config_reference() -> None:
    page = docgen.config_reference(_Outer)
    row = next(line for line in page.splitlines() if "`widget.brand_new_knob`" in line)
    assert "float" in row and "`0.25`" in row and "How far the new knob turns (added by the test)." in row
    assert "## `widget`" in page and "The widget section." in page
    label = next(line for line in page.splitlines() if line.startswith("| `label`"))
    assert "str \\| None" in label and "`null`" in label


def test_the_real_reference_pages_hold_the_code_s_keys_commands_events_and_configs() -> None:
    config = docgen.config_reference()
    assert "| `env.step_limit` | int | `300` |" in config
    assert "`amm.store`" in config and "`swift.loop_window`" in config
    cli = docgen.cli_reference()
    for command in ("## `fastslow eval`", "## `fastslow fork`", "## `fastslow train swift`"):
        assert command in cli
    assert "`--limit-per-task`" in cli
    events = docgen.events_reference()
    assert "## `episode_start`" in events and "## `gate_decision`" in events
    metrics = docgen.metrics_reference()
    assert "`mean_score`" in metrics and "`usage.step_shares`" in metrics
    configs = docgen.configs_reference()
    for name, _ in docgen.shipped_configs():
        assert f"## `{name}`" in configs
    assert "`constrained/full`" in configs and "`procedures.enabled` | `true`" in configs


def test_type_names_are_readable() -> None:
    from typing import Literal

    class M(BaseModel):
        a: Literal["x", "y"] = "x"
        b: list[int] = [1]
        c: dict[str, float] | None = None

    rows = {key: (type_, default) for key, type_, default, _ in docgen.model_rows(M)}
    assert rows == {
        "a": ('"x" \\| "y"', '"x"'),
        "b": ("list[int]", "[1]"),
        "c": ("dict[str, float] \\| None", "null"),
    }


# -- the strict build ----------------------------------------------------------------------------------


def _site_copy(tmp_path: Path) -> Path:
    """A copy of what the build reads (mkdocs.yml, docs/, the hook) in ``tmp_path``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "mkdocs_hooks.py", tmp_path / "scripts" / "mkdocs_hooks.py")
    (tmp_path / "src").symlink_to(ROOT / "src")  # mkdocstrings reads the sources from src/
    return tmp_path


def _build(root: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mkdocs", reason="mkdocs is in the docs extra (make test installs it)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(root / "site")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_site_builds_strictly_and_a_planted_broken_link_fails_it(tmp_path: Path) -> None:
    clean = _site_copy(tmp_path / "clean")
    proc = _build(clean)
    assert proc.returncode == 0, proc.stderr[-3000:]
    config_page = (clean / "site" / "reference" / "config" / "index.html").read_text()
    assert "env.step_limit" in config_page and "Maximum env steps per episode" in config_page
    assert "fastslow eval" in (clean / "site" / "reference" / "cli" / "index.html").read_text()

    broken = _site_copy(tmp_path / "broken")
    page = broken / "docs" / "tutorials" / "first-run.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    proc = _build(broken)
    assert proc.returncode != 0
    assert "no-such-page.md" in proc.stderr


def test_a_hand_written_file_under_a_generated_page_s_name_is_refused(tmp_path: Path) -> None:
    root = _site_copy(tmp_path)
    (root / "docs" / "reference" / "config.md").write_text("# stale copy\n")
    proc = _build(root)
    assert proc.returncode != 0 and "generated by fastslow.docgen" in proc.stderr


# -- the guides' commands ------------------------------------------------------------------------------


def guide_commands(page: Path) -> list[list[str]]:
    """The ``fastslow`` command lines of ``page``'s ```bash blocks, as argv lists without ``fastslow``."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", page.read_text(), flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("fastslow "):
                commands.append(shlex.split(line)[1:])
    return commands


def _parse(argv: list[str]) -> Any:
    """The Typer/Click context of ``argv`` (options and types checked, nothing run)."""
    import typer.main

    from fastslow.cli import app

    command: Any = typer.main.get_command(app)
    args = list(argv)
    while isinstance(getattr(command, "commands", None), dict):
        name = args.pop(0)
        assert name in command.commands, f"unknown command {name!r} in {argv}"
        command = command.commands[name]
    return command.make_context(name, args)


@pytest.mark.parametrize("page", GUIDES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_command_in_the_guides_parses_and_its_configuration_loads(page: Path) -> None:
    commands = guide_commands(page)
    if page.name in {"first-run.md", "fork-and-attribute.md", "paper-setup.md", "own-model.md"}:
        assert commands, f"{page} shows no fastslow command"
    for argv in commands:
        ctx = _parse(argv)
        config = ctx.params.get("config")
        if config:
            load_config(config, list(ctx.params.get("override") or []))


def _short(argv: list[str], runs: Path) -> list[str] | None:
    """The short form the slow test runs of a tutorial command (None: not run, e.g. a server)."""
    if argv[0] in {"view"}:
        return None
    out = [str(runs / a[len("runs/") :]) if a.startswith("runs/") else a for a in argv]
    if argv[0] == "eval":
        out = [a for a in out if a != "--warmup"]
        if "--limit-per-task" in out:
            out[out.index("--limit-per-task") + 1] = "1"
        out += ["-o", "env.step_limit=15"]
    if argv[0] == "run":
        out += ["-o", "env.step_limit=15"]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["first-run.md", "fork-and-attribute.md"])
def test_the_tutorials_commands_run(name: str, tmp_path: Path) -> None:
    for argv in guide_commands(DOCS / "tutorials" / name):
        short = _short(argv, tmp_path / "runs") if name == "first-run.md" else _short_fork(argv, tmp_path)
        if short is None:
            continue
        proc = subprocess.run(
            [sys.executable, "-m", "fastslow.cli", *short],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
        assert proc.returncode == 0, (short, proc.stderr[-2000:])


def _short_fork(argv: list[str], tmp_path: Path) -> list[str] | None:
    # The fork tutorial's commands are already small: they run as written (relative to tmp_path).
    return None if argv[0] == "view" else argv
