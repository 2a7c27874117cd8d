"""``fastslow train``: fit Swift's models from a gold dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Protocol

import typer

from fastslow.cli._common import ConfigOpt, OverrideOpt, console, out_path, run_config
from fastslow.errors import UsageError

train_app = typer.Typer(no_args_is_help=True, help="Train Swift models from a gold dataset.")


def _provenance(
    data: Path | list[Path], command: list[str], focus_data: list[Path] | None = None
) -> dict[str, object]:
    """What an artifact was trained from: the command (with every setting that shapes the artifact), the
    datasets (each manifest's sha256, split, kind and size; ``data`` one entry per dataset when there
    are several; ``focus_data`` those read for their focus steps only) and the code (package versions,
    git commit, hash of the sources)."""
    import hashlib

    from fastslow.eval.rundir import code_identity
    from fastslow.swift.data import MANIFEST

    def entry(d: Path) -> dict[str, object]:
        raw = (d / MANIFEST).read_bytes()
        manifest = json.loads(raw)
        return {
            "dir": str(d),
            "manifest_sha256": hashlib.sha256(raw).hexdigest(),
            "split": manifest.get("split"),
            "kind": manifest.get("kind", "gold"),
            "episodes": manifest.get("episodes"),
            "examples": manifest.get("examples"),
        }

    dirs = data if isinstance(data, list) else [data]
    return {
        "command": ["fastslow", "train", *command],
        "data": entry(dirs[0]) if len(dirs) == 1 else [entry(d) for d in dirs],
        **({"focus_data": [entry(d) for d in focus_data]} if focus_data else {}),
        **code_identity(),
    }


class _Model(Protocol):
    def save(self, path: Path) -> None: ...


def _write_model(model: _Model, target: Path, report: dict[str, Any]) -> None:
    """The end of every train command that writes one file: the model at ``target`` (its folder made),
    a line naming it with its size, then the training report as the JSON last line of stdout."""
    target.parent.mkdir(parents=True, exist_ok=True)
    model.save(target)
    console.print(f"wrote {target} ({target.stat().st_size / 1e6:.1f} MB)")
    print(json.dumps(report))


@train_app.command("swift")
def train_swift_cmd(
    data: Annotated[
        list[Path],
        typer.Option(
            "--data",
            help="Gold dataset directory (`fastslow data gold`); repeat it to add more, e.g. DAgger's "
            "on-policy rows (`fastslow data dagger`).",
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", parser=out_path, help="Weights file (default: the packaged model)."),
    ] = None,
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over the data.")] = 3,
    holdout_every: Annotated[
        int, typer.Option("--holdout-every", help="Hold out every n-th episode (0 = none).")
    ] = 0,
    hash_bits: Annotated[
        int, typer.Option("--hash-bits", help="Hashed weight vector of 2**N buckets (16-24).")
    ] = 20,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the negative sampling and order.")] = 0,
    seeds: Annotated[
        int,
        typer.Option("--seeds", help="Fit seeds --seed.. --seed+N-1 and ship the mean of their weights."),
    ] = 1,
    focus_data: Annotated[
        list[Path] | None,
        typer.Option(
            "--focus-data",
            help="Gold dataset read for its focus steps only: more objects each task focuses on, the "
            "examples unchanged (repeatable).",
        ),
    ] = None,
    evidence: Annotated[
        bool,
        typer.Option(
            "--evidence/--no-evidence",
            help="Evidence keys: the words that tell a task's conditional alternatives apart, crossed "
            "with what the agent has observed (docs/swift.md 2g).",
        ),
    ] = True,
    object_states: Annotated[
        bool,
        typer.Option(
            "--object-states/--no-object-states",
            help="Object-state keys: the words the look adds to the object a candidate names, such as a "
            "plant's stage (docs/swift.md 2h).",
        ),
    ] = True,
) -> None:
    """Train the embedded imitation Swift (CPU, numpy) and write its weights."""
    from fastslow.swift import imitation
    from fastslow.swift.data import require_dataset
    from fastslow.swift.train import TrainSettings, train

    if not 16 <= hash_bits <= 24:
        raise UsageError(f"--hash-bits must be 16-24 (got {hash_bits})")
    if seeds < 1:
        raise UsageError(f"--seeds must be at least 1 (got {seeds})")
    target = out or Path(imitation.__file__).parent / "weights" / imitation.ARTIFACT
    settings = TrainSettings(
        epochs=epochs,
        holdout_every=holdout_every,
        hash_bits=hash_bits,
        seed=seed,
        seeds=seeds,
        evidence=evidence,
        object_states=object_states,
    )
    focus_dirs = list(focus_data or [])
    for d in [*data, *focus_dirs]:
        require_dataset(d)  # before minutes of reading
    weights, report = train(data, settings, progress=lambda s: console.print(s), focus_data=focus_dirs)
    weights.meta["provenance"] = _provenance(
        data,
        [
            "swift",
            "--epochs",
            str(epochs),
            "--holdout-every",
            str(holdout_every),
            "--hash-bits",
            str(hash_bits),
            "--seed",
            str(seed),
            *(["--seeds", str(seeds)] if seeds > 1 else []),
            *([] if evidence else ["--no-evidence"]),
            *([] if object_states else ["--no-object-states"]),
        ],
        focus_dirs,
    )
    _write_model(weights, target, report)


@train_app.command("swift-rerank")
def train_swift_rerank_cmd(
    data: Annotated[Path, typer.Option("--data", help="Gold dataset directory (`fastslow data gold`).")],
    weights: Annotated[
        Path,
        typer.Option("--weights", help="Linear weights from `fastslow train swift --holdout-every N`."),
    ],
    out: Annotated[Path, typer.Option("--out", parser=out_path, help="Reranker file to write (JSON).")],
    depth: Annotated[int, typer.Option("--depth", help="Linear top candidates it re-orders.")] = 30,
    rounds: Annotated[int, typer.Option("--rounds", help="Most boosting rounds.")] = 400,
    semantic: Annotated[
        bool,
        typer.Option(
            "--semantic",
            help="Add MiniLM sentence-embedding similarities of each candidate (extra `embed`).",
        ),
    ] = False,
) -> None:
    """Fit the LightGBM reranker on the episodes the linear weights held out (extra `rank`)."""
    from fastslow.models.embeddings import minilm_encoder
    from fastslow.swift.imitation import SwiftWeights
    from fastslow.swift.rerank import RerankSettings, sha256_of, train_rerank

    if depth < 2 or rounds < 1:
        raise UsageError("--depth must be at least 2 and --rounds at least 1")
    linear = SwiftWeights.load(weights)
    reranker, report = train_rerank(
        data,
        linear,
        sha256_of(weights),
        RerankSettings(depth=depth, rounds=rounds),
        progress=lambda s: console.print(s, highlight=False),
        embedder=minilm_encoder() if semantic else None,
    )
    command = [
        "swift-rerank",
        "--depth",
        str(depth),
        "--rounds",
        str(rounds),
        *(["--semantic"] if semantic else []),
    ]
    reranker.meta["provenance"] = {**_provenance(data, command), "linear_sha256": reranker.linear_sha256}
    _write_model(reranker, out, report)


@train_app.command("swift-memory")
def train_swift_memory_cmd(
    data: Annotated[Path, typer.Option("--data", help="Gold dataset directory (`fastslow data gold`).")],
    store: Annotated[
        str, typer.Option("--store", help="AMM store a warm-up filled (RUN/memory.sqlite, or a DSN).")
    ],
    out: Annotated[Path, typer.Option("--out", parser=out_path, help="Weights file to write (.npz).")],
    weights: Annotated[
        Path | None,
        typer.Option("--weights", help="Linear weights to start from (default: the packaged model)."),
    ] = None,
    config: ConfigOpt = "swift-amm",
    override: OverrideOpt = None,
    l2: Annotated[float, typer.Option("--l2", help="Pull of the four weights towards zero.")] = 0.01,
) -> None:
    """Fit the weights Swift gives to T1 memories on gold states where it fails (memory/t1_weights.py)."""
    from fastslow.env.world import require_scienceworld
    from fastslow.memory.stores import MemoryStoreError, is_dsn, open_location
    from fastslow.memory.stores.vectors import embedder_for
    from fastslow.memory.t1_weights import FitSettings, SwiftView, fit_memory_weights
    from fastslow.swift.imitation import SwiftWeights

    cfg = run_config(config, override)
    require_scienceworld(cfg.env, "train swift-memory")
    if not cfg.amm.enabled or not cfg.amm.retrieval.t1:
        raise UsageError(f"config {cfg.name} does not run T1 (amm.enabled, amm.retrieval.t1)")
    if l2 < 0:
        raise UsageError("--l2 must be at least 0")
    if not is_dsn(store) and not Path(store).is_file():
        raise UsageError(f"memory store not found: {store}")
    linear = SwiftWeights.load(weights)
    try:
        opened = open_location(
            store,
            cfg.amm.table,
            readonly=True,
            password_env=cfg.amm.password_env,
            embedder=embedder_for(cfg.amm.retrieval),
            max_terms=cfg.amm.retrieval.query_terms,
        )
    except MemoryStoreError as exc:
        raise UsageError(str(exc)) from exc
    view = SwiftView(
        min_confidence=cfg.swift.min_confidence,
        repeat_penalty=cfg.swift.repeat_penalty,
        loop_window=cfg.swift.loop_window,
        focus_rule=cfg.swift.focus_rule,
        rerank_pool=cfg.swift.rerank_pool,
        box_features=cfg.procedures.enabled,
    )
    try:
        fitted, report = fit_memory_weights(
            data,
            linear,
            cfg.amm,
            opened,
            store if is_dsn(store) else Path(store).name,
            view,
            FitSettings(l2=l2),
            progress=lambda s: console.print(s, highlight=False),
        )
    finally:
        opened.close()
    # the report (kept in the weights' meta) names the store; a DSN is not repeated here
    report["provenance"] = _provenance(data, ["swift-memory", "--config", cfg.name, "--l2", str(l2)])
    _write_model(fitted, out, report)


@train_app.command("swift-t5")
def train_swift_t5_cmd(
    data: Annotated[Path, typer.Option("--data", help="Gold dataset directory (`fastslow data gold`).")],
    base: Annotated[Path, typer.Option("--base", help="Local seq2seq checkpoint, e.g. Flan-T5.")],
    out: Annotated[
        Path, typer.Option("--out", parser=out_path, help="Directory for the fine-tuned checkpoint.")
    ],
    max_steps: Annotated[int, typer.Option("--max-steps", help="Stop after N steps (-1 = epochs).")] = -1,
    epochs: Annotated[float, typer.Option("--epochs", help="Passes over the data.")] = 1.0,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Per-device batch size.")] = 8,
    learning_rate: Annotated[float, typer.Option("--lr", help="Learning rate.")] = 1e-4,
) -> None:
    """Fine-tune a seq2seq Swift (SwiftSage's Flan-T5 setup) with the HF trainer (extra `t5`)."""
    from fastslow.swift.t5 import train_t5

    report = train_t5(
        data,
        base,
        out,
        max_steps=max_steps,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        progress=lambda s: console.print(s),
    )
    console.print(f"wrote {out}")
    print(json.dumps(report))
