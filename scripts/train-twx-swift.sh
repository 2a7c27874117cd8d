#!/usr/bin/env bash
# Train TextWorldExpress's Swift, the packaged src/fastslow/swift/weights/twx-imitation.npz (issue 50):
# the benchmark's cached train gold paths (the `train` set: the first 200 train seeds of each of the 7
# games, src/fastslow/env/textworldexpress/data/gold-train.json) replayed into a gold dataset, then the
# same trainer and settings as ScienceWorld's packaged Swift (3 epochs, 2**20 buckets, the mean of 3
# seeds; no --focus-data: TextWorldExpress has no focus action). The twx-swift-* configurations play it.
#
#   scripts/train-twx-swift.sh [DATA_DIR]     (default runs/twx-swift-gold; run from anywhere)
#
# Rerun it whenever Swift's features or TextWorldExpress's semantics change: the weights are hashed
# features, and the rows are read with the world's semantics (their visited rooms), so DATA_DIR must not
# exist yet (every run replays the data afresh: about 25 s). The weights record their provenance (the
# dataset's manifest sha256, this command, the code); `fastslow train swift` prints its training report
# as the last line. About 3.5 min in all on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-runs/twx-swift-gold}
fastslow=${FASTSLOW:-.venv/bin/fastslow}
[ ! -e "$data" ] || { echo "$data exists: remove it (the data is rebuilt every run) or name another" >&2; exit 2; }

$fastslow data gold --world textworldexpress --per-task 0 --workers 1 --out "$data"
$fastslow train swift --data "$data" --epochs 3 --holdout-every 0 --hash-bits 20 --seed 0 --seeds 3 \
    --out src/fastslow/swift/weights/twx-imitation.npz
