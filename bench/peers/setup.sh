#!/bin/sh
# Make bench/peers/.venv: the peers of `flow bench --peers` (Inspect AI, DBOS) in a venv of
# their own, so the project's pins are untouched. Installs the hashed lock
# (requirements.txt); `setup.sh --unlocked` installs only the two pins of requirements.in
# and lets pip resolve the rest (another platform, whose wheels have other hashes).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10 or later, please")'
[ -x "$here/.venv/bin/python" ] || "$python" -m venv "$here/.venv"
if [ "${1:-}" = "--unlocked" ]; then
    "$here/.venv/bin/pip" install -r "$here/requirements.in"
else
    "$here/.venv/bin/pip" install --require-hashes -r "$here/requirements.txt"
fi
"$here/.venv/bin/python" -c 'from importlib.metadata import version as v; print("bench/peers ready: inspect-ai", v("inspect-ai"), "dbos", v("dbos"))'
