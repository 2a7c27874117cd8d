"""T5 Swift: the paper's configuration of the fast proposer (paper §3; SwiftSage's Flan-T5 policy).

SwiftSage fine-tunes Flan-T5-large on oracle trajectories and decodes the next action with beam
search (5 beams, at most 16 tokens). ``T5Swift`` loads such a seq2seq checkpoint from a local
directory (nothing is downloaded), renders the input in SwiftSage's exact format (``swift/t5_format.py``,
so SwiftSage's public ``swift_sw`` checkpoint reads what it was trained on) and returns the top-k beams
as ranked candidates; the confidence is the softmax of the beam scores. ``train_t5`` fine-tunes any
local seq2seq checkpoint on the gold dataset with the HF trainer (``fastslow train swift-t5``), on inputs
rendered by the same function. torch and transformers are the optional extra ``t5``.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastslow.core.proposal import MemoryHint, Proposal, RankedAction
from fastslow.core.trajectory import Trajectory
from fastslow.env.world import get_world
from fastslow.errors import UsageError
from fastslow.swift.data import match_valid, read_episodes, replay_rows
from fastslow.swift.t5_format import decoded_action, render_trajectory
from fastslow.swift.train import label_of

SOURCE_MAX_TOKENS = 1024
TARGET_MAX_TOKENS = 16


def _require() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise UsageError(
            "the t5 Swift backend needs the optional extra: pip install torch==2.13.0 'fastslow[t5]'"
        ) from exc
    return torch, transformers


class T5Swift:
    """A ``Proposer`` backed by a local seq2seq checkpoint (Flan-T5 in the paper)."""

    name = "t5"

    def __init__(self, model_path: str, top_k: int = 5, num_beams: int = 5, max_new_tokens: int = 16) -> None:
        torch, transformers = _require()
        path = Path(model_path)
        if not path.is_dir():
            raise UsageError(f"T5 Swift checkpoint directory not found: {model_path}")
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = transformers.AutoModelForSeq2SeqLM.from_pretrained(path, local_files_only=True)
        self.model.eval()
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model.to(self.device)
        self.top_k = top_k
        self.num_beams = max(num_beams, top_k)
        self.max_new_tokens = max_new_tokens
        self._last_call: tuple[weakref.ref[Trajectory], int] | None = None
        """The episode of the last call and its history length then (see ``_renamed_lines``)."""

    def _renamed_lines(self, traj: Trajectory) -> int:
        """History lines that SwiftSage's loop would have renamed by now (``t5_format.clean_history``).

        SwiftSage cleans its running history in place at every Swift call, so what an input shows
        depends on which earlier states Swift was asked at. Those are this proposer's own earlier calls
        on the same trajectory; a new trajectory is a new episode, with nothing renamed yet.
        """
        lines = len(traj.turns) + 1  # the seed line, then one per step
        last = self._last_call
        renamed = last[1] if last is not None and last[0]() is traj else 0
        self._last_call = (weakref.ref(traj), lines)
        return renamed

    def generate(self, text: str) -> list[tuple[str, float]]:
        """Decoded actions and their beam scores (length-normalised log-probabilities), best first."""
        torch, _ = _require()
        enc = self.tokenizer(text, return_tensors="pt", truncation=True, max_length=SOURCE_MAX_TOKENS)
        enc = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
        with torch.no_grad():
            out = self.model.generate(
                **enc,
                num_beams=self.num_beams,
                num_return_sequences=self.top_k,
                max_new_tokens=self.max_new_tokens,
                output_scores=True,
                return_dict_in_generate=True,
                early_stopping=True,
            )
        # Decoded with the special tokens and cleaned as SwiftSage does (``decoded_action``).
        texts = self.tokenizer.batch_decode(out.sequences, skip_special_tokens=False)
        scores = out.sequences_scores.tolist() if out.sequences_scores is not None else [0.0] * len(texts)
        return [(decoded_action(t), float(s)) for t, s in zip(texts, scores, strict=True)]

    def propose(self, traj: Trajectory, memories: Sequence[MemoryHint] | None = None) -> Proposal:
        cur = traj.current
        text = render_trajectory(traj, memories, self._renamed_lines(traj))
        valid = set(cur.valid_actions)
        seen: dict[str, float] = {}
        for action, score in self.generate(text):
            # Snap SwiftSage-style spellings ("examine X", "... in inventory") onto the valid list.
            snapped = match_valid(action, valid, traj.semantics) or action
            if snapped not in seen:
                seen[snapped] = score
        if not seen:
            return Proposal((), 0.0)
        best = max(seen.values())
        total = sum(math.exp(s - best) for s in seen.values())
        cands = tuple(RankedAction(a, s) for a, s in sorted(seen.items(), key=lambda kv: -kv[1]))
        return Proposal(cands, 1.0 / total)


def seq2seq_pairs(data: Path) -> list[tuple[str, str]]:
    """(input, target action) for every gold step; the target uses the valid-list spelling if any.

    The input is rendered from the episode's trajectory up to the step, exactly as at inference."""
    pairs: list[tuple[str, str]] = []
    for rows in read_episodes(data):
        for row, traj in replay_rows(rows, get_world().semantics):
            gold = str(row["gold_action"])
            target = label_of(gold, row["valid_actions"], traj.semantics) or gold
            pairs.append((render_trajectory(traj), target))
    return pairs


def train_t5(
    data: Path,
    base_model: Path,
    out: Path,
    max_steps: int = -1,
    epochs: float = 1.0,
    batch_size: int = 8,
    learning_rate: float = 1e-4,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fine-tune a local seq2seq checkpoint on the gold dataset with the HF trainer; save to ``out``."""
    torch, transformers = _require()
    if not base_model.is_dir():
        raise UsageError(f"base checkpoint directory not found: {base_model}")
    tokenizer = transformers.AutoTokenizer.from_pretrained(base_model, local_files_only=True)
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(base_model, local_files_only=True)
    pairs = seq2seq_pairs(data)[:limit] if limit else seq2seq_pairs(data)
    if progress is not None:
        progress(f"{len(pairs)} training pairs from {data}")

    class Pairs(torch.utils.data.Dataset):  # type: ignore[misc,name-defined]
        def __len__(self) -> int:
            return len(pairs)

        def __getitem__(self, i: int) -> dict[str, Any]:
            source, target = pairs[i]
            enc = tokenizer(source, truncation=True, max_length=SOURCE_MAX_TOKENS)
            enc["labels"] = tokenizer(text_target=target, truncation=True, max_length=TARGET_MAX_TOKENS)[
                "input_ids"
            ]
            return dict(enc)

    args = transformers.Seq2SeqTrainingArguments(
        output_dir=str(out / "trainer"),
        per_device_train_batch_size=batch_size,
        learning_rate=learning_rate,
        num_train_epochs=epochs,
        max_steps=max_steps,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=not torch.cuda.is_available(),
        disable_tqdm=True,
    )
    trainer = transformers.Seq2SeqTrainer(
        model=model,
        args=args,
        train_dataset=Pairs(),
        data_collator=transformers.DataCollatorForSeq2Seq(tokenizer, model=model),
    )
    result = trainer.train()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {"pairs": len(pairs), "steps": int(result.global_step), "train_loss": float(result.training_loss)}
