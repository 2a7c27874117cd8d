#!/usr/bin/env bash
# DAgger for the learned Swift (issue #29; docs/swift.md 2d): play swift-only on the gold dataset's train
# variations, label the states it reaches with the gold path's next step, retrain on gold + on-policy
# rows, and compare on the same dev episodes against the same gold data without them.
#
#   scripts/swift-dagger.sh GOLD_DIR OUT_DIR [ROUNDS] [DEV_LIMIT_PER_TASK]
#
# GOLD_DIR: `fastslow data gold --split train --per-task N --out GOLD_DIR`. Round 1 plays the packaged
# model; round k+1 plays round k's weights, and trains on the gold rows and every round's on-policy rows
# so far (DAgger's aggregation). Writes OUT_DIR/{gold.npz,dagger-K/,round-K.npz} and the dev runs
# OUT_DIR/dev-*, and prints one line per model: dev paper / strict score, -100 endings, step shares.
# Every step is resumable: an artifact or a finished run already there is kept (delete it to redo).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 GOLD_DIR OUT_DIR [ROUNDS] [DEV_LIMIT_PER_TASK]" >&2; exit 2; }
gold=$1 out=$2 rounds=${3:-1} limit=${4:-10}
[ -f "$gold/manifest.json" ] || { echo "$gold is not a gold dataset (no manifest.json)" >&2; exit 2; }
fastslow=${FASTSLOW:-fastslow}
mkdir -p "$out"

dev=(--config swift-only --set dev --limit-per-task "$limit" --workers 2)
play() {  # name, overrides...
  local name=$1
  shift
  [ -f "$out/dev-$name/metrics.json" ] || $fastslow eval "${dev[@]}" "$@" --out "$out/dev-$name"
}

# The control: the same gold rows, no on-policy ones.
[ -f "$out/gold.npz" ] || $fastslow train swift --data "$gold" --out "$out/gold.npz"
play packaged
play gold -o "swift.model_path=$out/gold.npz"

data=(--data "$gold")
players=(packaged)
for k in $(seq 1 "$rounds"); do
  player=()
  [ "$k" -gt 1 ] && player=(-o "swift.model_path=$out/round-$((k - 1)).npz")
  [ -f "$out/dagger-$k/manifest.json" ] ||
    $fastslow data dagger --gold "$gold" --out "$out/dagger-$k" --config swift-only "${player[@]}" --workers 2
  data+=(--data "$out/dagger-$k")
  [ -f "$out/round-$k.npz" ] || $fastslow train swift "${data[@]}" --out "$out/round-$k.npz"
  play "round-$k" -o "swift.model_path=$out/round-$k.npz"
  players+=("round-$k")
done

python3 - "$out" packaged gold "${players[@]:1}" <<'EOF'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
for name in sys.argv[2:]:
    m = json.loads((out / f"dev-{name}" / "metrics.json").read_text())
    shares = {k: round(v, 3) for k, v in m["usage"]["step_shares"].items() if v}
    print(f"{name:10} dev {m['episodes']} eps: {m['mean_score']:.2f} / {m['mean_score_strict']:.2f} "
          f"(paper / strict), {m['failures']} at -100, steps {shares}")
EOF
