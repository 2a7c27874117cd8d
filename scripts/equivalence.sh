#!/usr/bin/env bash
# Play every shipped configuration that needs no remote server on two short dev episodes, for a
# refactor's equivalence check (event streams before and after, compared by scripts/compare_events.py).
#
#   scripts/equivalence.sh SRC OUT [CONFIG ...]
#
# SRC: the `src` folder of the checkout to play (a `git worktree` of the commit before the change, or
# this one's); OUT: a fresh folder, one run directory per configuration. The fast pathway plays two dev
# episodes to their end; the configurations with the embedded LLM play two short dev episodes capped at
# 10 steps (a Sage round costs about a minute on 2 cores; ReAct and Reflexion call the model every
# step; Reflexion plays up to 3 trials of 10). Every AMM run starts from an empty store
# (its default, <run dir>/memory.sqlite). The TextWorldExpress configurations play one twc and one coin
# dev game: the fast ones to their end, the constrained (embedded LLM) ones capped at 10 steps.
# Then, for two such folders A and B:
#   for d in A/*/; do python scripts/compare_events.py "$d" "B/$(basename "$d")"; done
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: scripts/equivalence.sh SRC OUT [CONFIG ...]" >&2
    exit 2
fi
src=$(cd "$1" && pwd)
out=$2
shift 2
py=${PYTHON:-.venv/bin/python}
fast="swift-only swift-amm swift-srm swift-amm-srm expert expert-amm-srm oracle"
llm="baseline amm srm full swiftsage sensitivity/full-critic6 sensitivity/full-no-t1
     constrained/baseline constrained/amm constrained/srm constrained/full
     react reflexion react-amm-srm reflexion-amm-srm"
twx_fast="twx-swift-only twx-swift-amm twx-swift-srm twx-swift-amm-srm"
twx_llm="twx-constrained-baseline twx-constrained-amm twx-constrained-srm twx-constrained-full"
configs=${*:-$fast $llm $twx_fast $twx_llm}
mkdir -p "$out"
for c in $configs; do
    name=${c//\//-}
    if [[ " $fast " == *" $c "* ]]; then
        args=(--set dev --tasks 1,13 --limit-per-task 1)
    elif [[ " $twx_fast " == *" $c "* ]]; then
        args=(--set dev --tasks twc,coin --limit-per-task 1)
    elif [[ " $twx_llm " == *" $c "* ]]; then
        args=(--set dev --tasks twc,coin --limit-per-task 1 -o env.step_limit=10)
    else
        args=(--set dev --tasks 17,25 --limit-per-task 1 -o env.step_limit=10)
    fi
    echo "== $c"
    PYTHONPATH="$src" "$py" -c 'from fastslow.cli import main; main()' eval --config "$c" "${args[@]}" \
        --workers 1 --out "$out/$name"
done
