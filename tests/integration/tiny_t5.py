"""A tiny random T5 checkpoint built in the test, in place of SwiftSage's Flan-T5-large: nothing is
downloaded. The tokenizer is word-level over the words given; the model is a 1-layer T5."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest


def tiny_t5(words: Iterable[str], out: Path) -> Path:
    """Save a randomly initialised 1-layer T5 and its word-level tokenizer into ``out``."""
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    vocab: dict[str, int] = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for word in words:
        vocab.setdefault(word, len(vocab))
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tok.post_processor = tokenizers.processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", 1)]
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )
    config = transformers.T5Config(
        vocab_size=len(vocab),
        d_model=32,
        d_ff=64,
        d_kv=8,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    # Seeded: an unseeded random T5 may, now and then, generate a valid action at every step, and a
    # test that needs Swift to fail (and so reach Sage) would then be flaky.
    transformers.set_seed(0)
    transformers.T5ForConditionalGeneration(config).save_pretrained(out)
    fast.save_pretrained(out)
    return out
