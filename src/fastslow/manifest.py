"""What a command wrote into a directory, recorded as it writes: the proof of origin a deletion needs.

Every command that writes a directory (``eval``, ``fork``, ``attribute``, ``report``, ``data``,
``train``) appends one JSON line per file to ``DIR/.fastslow-written.jsonl``: the path relative to DIR
and, once the file is complete, its sha256 (``None`` while it is being written). The file is only ever
appended to, one line per ``write`` call, so worker processes may record into it concurrently (POSIX
appends of a line this short are atomic on a local file system).

A file is *owned* when its last line records it and it still is what was recorded: the same sha256,
or, for a file recorded as being written (an event log of a killed run), any content. A file a user
put there, or changed after fastslow wrote it, is not owned: ``--restart`` and every overwrite leave it
alone. Names alone never prove origin (a user's ``report/report.md`` is not fastslow's because of its
name).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

MANIFEST_FILE = ".fastslow-written.jsonl"
LOCK_FILE = ".fastslow.lock"
"""A claimed directory's lock file (``eval.rundir.run_lock``): it marks the directory whose manifest
records what is written under it."""
BOOKKEEPING = frozenset({MANIFEST_FILE, LOCK_FILE})
"""Files a claimed directory holds about itself, never a user's."""
_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class Manifest:
    """The written-files record of one directory (``DIR/.fastslow-written.jsonl``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / MANIFEST_FILE

    def _rel(self, path: Path) -> str:
        return os.path.relpath(os.path.abspath(path), os.path.abspath(self.folder))

    def _append(self, entries: Iterable[dict[str, str | None]]) -> None:
        lines = "".join(json.dumps(e, sort_keys=True) + "\n" for e in entries)
        if not lines:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        # One os.write of O_APPEND: concurrent writers' lines never interleave.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, lines.encode("utf-8"))
        finally:
            os.close(fd)

    def writing(self, *paths: Path) -> None:
        """Record that these files are about to be written by this command (content not yet known)."""
        self._append({"path": self._rel(p), "sha256": None} for p in paths)

    def wrote(self, *paths: Path) -> None:
        """Record these complete files with their current sha256."""
        self._append({"path": self._rel(p), "sha256": file_sha256(p)} for p in paths if p.is_file())

    def removed(self, *paths: Path) -> None:
        """Record that this command removed (or moved away) these files: they are no longer its own."""
        self._append({"path": self._rel(p), "sha256": "-"} for p in paths)

    def entries(self) -> dict[str, str | None]:
        """The last record of each path: its sha256, ``None`` (being written) or ``"-"`` (removed).
        An unreadable line (a torn write of a killed process) is skipped: it proves nothing."""
        found: dict[str, str | None] = {}
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return found
        for line in text.splitlines():
            try:
                entry = json.loads(line)
                rel, digest = entry["path"], entry["sha256"]
            except (ValueError, KeyError, TypeError):
                continue
            if isinstance(rel, str) and (digest is None or isinstance(digest, str)):
                found[rel] = digest
        return found

    def owns(self, path: Path, entries: dict[str, str | None] | None = None) -> bool:
        """Whether ``path`` is a file this directory's commands wrote and nobody changed since."""
        rel = self._rel(path)
        if rel.startswith(".."):
            return False
        digest = (entries if entries is not None else self.entries()).get(rel, "-")
        if digest == "-" or not path.is_file() or path.is_symlink():
            return False
        return digest is None or file_sha256(path) == digest

    def owned_files(self) -> list[Path]:
        """Every file present that this directory's commands wrote and nobody changed since."""
        entries = self.entries()
        return sorted(
            self.folder / rel
            for rel in entries
            if not rel.startswith("..") and self.owns(self.folder / rel, entries)
        )

    def exists(self) -> bool:
        return self.path.is_file()


def claimed_root(path: Path) -> Path | None:
    """The claimed directory ``path`` lies in: its nearest ancestor holding a lock file (a directory a
    command took with ``run_lock``); None outside any."""
    folder = Path(os.path.abspath(path)).parent
    for candidate in (folder, *folder.parents):
        if (candidate / LOCK_FILE).is_file():
            return candidate
    return None


def _by_root(paths: Iterable[Path]) -> dict[Path, list[Path]]:
    groups: dict[Path, list[Path]] = {}
    for path in paths:
        root = claimed_root(path)
        if root is not None:
            groups.setdefault(root, []).append(path)
    return groups


def record_writing(*paths: Path) -> None:
    """Record, in the manifest of the claimed directory each path lies in, that this command is about
    to write it (its content is not known yet: an event log, an SQLite store). A path that already
    holds a file nobody recorded is left unrecorded: it is not this command's to claim. Outside a
    claimed directory nothing is recorded."""
    for root, group in _by_root(paths).items():
        manifest = Manifest(root)
        # the whole record is read only when a path is already taken (a resume's log, a store)
        entries = manifest.entries() if any(p.exists() for p in group) else {}
        manifest.writing(*(p for p in group if not p.exists() or manifest.owns(p, entries)))


def record_written(*paths: Path) -> None:
    """Record these complete files with their sha256 in their claimed directory's manifest."""
    for root, group in _by_root(paths).items():
        Manifest(root).wrote(*group)


def record_removed(*paths: Path) -> None:
    """Record that this command removed or moved away these files."""
    for root, group in _by_root(paths).items():
        Manifest(root).removed(*group)


def owned(path: Path) -> bool:
    """Whether ``path`` is a file a fastslow command wrote into its claimed directory, unchanged since."""
    root = claimed_root(path)
    return root is not None and Manifest(root).owns(path)
