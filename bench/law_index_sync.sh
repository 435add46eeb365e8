#!/usr/bin/env bash
# Peak RSS and CPU of `stichtag index sync` (then `index rebuild`) on the whole law corpus.
#
#   nice bench/law_index_sync.sh [CODE_DIR] [WORK_DIR]
#
# CODE_DIR is a checkout to measure (default: this one; a `git worktree add --detach DIR
# COMMIT` measures another commit side by side). Every run starts a fresh embedded
# PostgreSQL in WORK_DIR/data (removed first) and takes minutes of CPU: run it nice'd in
# the background with a log. /usr/bin/time reports the CLI process only, not PostgreSQL.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
code=${1:-$here}
work=${2:-/tmp/stichtag-law-sync}
python=${PYTHON:-$here/.venv/bin/python}
manifest=$here/../shared/corpus/de-insurance-law/manifest.csv
rm -rf "$work" && mkdir -p "$work"
export STICHTAG_DATA_DIR=$work/data STICHTAG_MODELS_DIR=${STICHTAG_MODELS_DIR:-$here/.data/models}
unset STICHTAG_DATABASE_URL STICHTAG_MIGRATION_DATABASE_URL
cd "$code"  # `python -m stichtag.cli` imports the app of CODE_DIR
echo "commit $(git rev-parse --short HEAD), start $(date -u +%T)"
"$python" -m stichtag.cli tenants create law --time-zone Europe/Berlin
/usr/bin/time -f "ingest: wall %e s, max RSS %M kB" \
    "$python" -m stichtag.cli ingest --tenant law --manifest "$manifest" --json > "$work/ingest.json"
/usr/bin/time -f "index sync: wall %e s, user %U s, max RSS %M kB" \
    "$python" -m stichtag.cli index sync --tenant law
"$python" -m stichtag.cli index check --tenant law
/usr/bin/time -f "index rebuild (lexical only): wall %e s, user %U s, max RSS %M kB" \
    "$python" -m stichtag.cli index rebuild --tenant law
echo "end $(date -u +%T)"
