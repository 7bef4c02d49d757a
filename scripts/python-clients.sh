#!/usr/bin/env bash
# The Python client's checks (issue 32): a virtual environment in .venv-clients/ (git-ignored) with
# the pinned test dependencies, then pytest against a live server, mypy --strict, and schemathesis
# against a live server with the demo data. Needs the built server (npm run build).
#   scripts/python-clients.sh            everything
#   scripts/python-clients.sh --setup    only the environment (npm run clients:generate uses its generator)
set -euo pipefail
cd "$(dirname "$0")/.."
# The live servers run on the embedded store: .ci/run exports the engines' variables for the contract
# suites, and a demo seeded into PostgreSQL/FerretDB takes far longer than these tests wait.
unset ESDB_URL POSTGRES_URL MONGODB_URI MONGODB_DB KAFKA_BROKERS KAFKA_TOPIC_PREFIX
venv=.venv-clients
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r clients/python/requirements-test.txt
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation --no-deps -e clients/python
[ "${1:-}" = "--setup" ] && exit 0
[ -f dist/src/app/main.js ] || npm run --silent build
cd clients/python
echo "== pytest (clients/python, against a live server)"
"../../$venv/bin/pytest" -q -p no:cacheprovider
echo "== mypy --strict (clients/python)"
"../../$venv/bin/mypy" --strict --cache-dir=/dev/null
echo "== schemathesis (every operation, against a live server with the demo data)"
"../../$venv/bin/python" tests/run_schemathesis.py
