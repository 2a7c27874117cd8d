"""The entry point: one-line errors, exit codes, Ctrl-C."""

from __future__ import annotations

import logging
import sys
from typing import NoReturn

import typer

from fastslow.cli._common import app, err_console
from fastslow.errors import CorruptLogError, FastslowError, ModelUnavailableError, OutputError, UsageError

RESUMABLE = frozenset({"eval", "attribute"})
"""Commands whose rerun resumes what an interrupted one left (their Ctrl-C line says so)."""
INTERRUPTED = 130
"""The exit code of a command stopped by Ctrl-C (128 + SIGINT), as shells report it."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: one-line errors and exit code 2 for bad input, whatever layer detects it; Ctrl-C
    is one line and exit code 130 (the command's workers are stopped on the way out)."""
    root = logging.getLogger()
    if not any(isinstance(f, _QuietCtrlC) for f in root.filters):
        root.addFilter(_QuietCtrlC())
    try:
        result = app(args=argv, standalone_mode=False)
    except (UsageError, ModelUnavailableError, OutputError, CorruptLogError) as exc:
        _fail(str(exc), 2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _interrupted(argv)
    except typer.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # click's way of reporting Ctrl-C
            _interrupted(argv)
        _fail("aborted", INTERRUPTED)
    except FastslowError as exc:
        if _by_ctrl_c(exc):
            _interrupted(argv)
        _fail(f"{type(exc).__name__}: {exc}", 1)
    except Exception as exc:
        if _by_ctrl_c(exc):
            _interrupted(argv)
        # Command-line parsing errors (missing option, bad integer) come from the click layer under
        # typer, whose module path differs between typer versions; they all carry these two members.
        format_message = getattr(exc, "format_message", None)
        if callable(format_message) and isinstance(getattr(exc, "exit_code", None), int):
            _fail(str(format_message()), 2)
        from fastslow.redact import excepthook

        # A bug's traceback may quote a model server's URL: printed masked, as every line fastslow
        # writes is (typer's own hook, which app() put in place, would print it whole).
        sys.excepthook = excepthook
        raise
    if result == INTERRUPTED:  # typer's way of reporting Ctrl-C outside standalone mode: Exit(130)
        _interrupted(argv)
    if isinstance(result, int) and result:
        sys.exit(result)


class _QuietCtrlC(logging.Filter):
    """Drops a record that logs a KeyboardInterrupt (py4j logs Ctrl-C inside a JVM call with its
    traceback on the root logger), and every record after it: Ctrl-C is under way, what is logged
    from there on is the noise of its unwinding (the JVM the same Ctrl-C killed), and ``main`` says
    it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt):
            logging.disable(logging.CRITICAL)
            return False
        return True


def _by_ctrl_c(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while Ctrl-C was being handled: py4j 0.10.9 answers a
    KeyboardInterrupt inside a JVM call with an AttributeError of its own (``shutdown_socket``), and a
    JVM that Ctrl-C killed too can surface as an error of the call in flight."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _interrupted(argv: list[str] | None) -> NoReturn:
    """One line for Ctrl-C, exit 130 (the command has stopped its workers and released its lock)."""
    args = sys.argv[1:] if argv is None else argv
    command = next((a for a in args if not a.startswith("-")), "")
    resume = ": what finished is kept; rerun the same command to resume" if command in RESUMABLE else ""
    err_console.print(f"interrupted (Ctrl-C){resume}", markup=False, highlight=False, soft_wrap=True)
    logging.disable(logging.CRITICAL)  # the exit closes JVMs that Ctrl-C killed: py4j would log each
    sys.exit(INTERRUPTED)


def _fail(message: str, code: int) -> None:
    from fastslow.redact import redact_text

    # An error may quote an override or a DSN; the console shows it as every record does.
    err_console.print(f"error: {redact_text(message)}", highlight=False, soft_wrap=True)
    sys.exit(code)
