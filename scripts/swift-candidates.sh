#!/usr/bin/env bash
# Swift's model selection on dev (issue #29 point 2; docs/swift.md 2b): the linear ranker, its LightGBM
# reranker and the reranker with MiniLM similarity columns, all on the same linear weights, trained on a
# gold dataset of train variations and played swift-only (no task logic) on the same dev episodes.
#
#   scripts/swift-candidates.sh GOLD_DIR OUT_DIR [DEV_LIMIT_PER_TASK]
#
# GOLD_DIR: `fastslow data gold --split train --per-task 0 --out GOLD_DIR` (all 3,592 train variations).
# Writes OUT_DIR/{linear.npz,rerank.json,rerank-semantic.json}, the dev runs OUT_DIR/dev-*, and prints
# one line per candidate: dev paper / strict score, -100 endings, step shares and the validation top-1;
# the packaged model's dev run (OUT_DIR/dev-packaged) is the reference line.
# Every step is resumable: an artifact or a finished run already there is kept (delete it to redo).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 GOLD_DIR OUT_DIR [DEV_LIMIT_PER_TASK]" >&2; exit 2; }
gold=$1 out=$2 limit=${3:-3}
[ -f "$gold/manifest.json" ] || { echo "$gold is not a gold dataset (no manifest.json)" >&2; exit 2; }
fastslow=${FASTSLOW:-fastslow}
mkdir -p "$out"

[ -f "$out/linear.npz" ] || $fastslow train swift --data "$gold" --holdout-every 5 --out "$out/linear.npz"
[ -f "$out/rerank.json" ] ||
  $fastslow train swift-rerank --data "$gold" --weights "$out/linear.npz" --out "$out/rerank.json"
[ -f "$out/rerank-semantic.json" ] ||
  $fastslow train swift-rerank --data "$gold" --weights "$out/linear.npz" --semantic \
    --out "$out/rerank-semantic.json"

dev=(--config swift-only --set dev --limit-per-task "$limit" --workers 2)
play() {  # name, overrides...
  local name=$1
  shift
  [ -f "$out/dev-$name/metrics.json" ] || $fastslow eval "${dev[@]}" "$@" --out "$out/dev-$name"
}
play packaged
dev+=(-o "swift.model_path=$out/linear.npz")
play linear
play rerank -o swift.backend=rerank -o "swift.rerank_path=$out/rerank.json"
play rerank-semantic -o swift.backend=rerank -o "swift.rerank_path=$out/rerank-semantic.json"

python3 - "$out" <<'EOF'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
for name, model in (
    ("packaged", None),
    ("linear", None),
    ("rerank", "rerank.json"),
    ("rerank-semantic", "rerank-semantic.json"),
):
    m = json.loads((out / f"dev-{name}" / "metrics.json").read_text())
    shares = {k: round(v, 3) for k, v in m["usage"]["step_shares"].items() if v}
    top1 = ""
    if model:
        meta = json.loads((out / model).read_text())["meta"]
        top1 = f"valid top-1 linear {meta['valid_top1_linear']} -> {meta['valid_top1_rerank']}"
    print(f"{name:16} dev {m['episodes']} eps: {m['mean_score']:.2f} / {m['mean_score_strict']:.2f} "
          f"(paper / strict), {m['failures']} at -100, steps {shares} {top1}")
EOF
