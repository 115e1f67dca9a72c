#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what it needs, then runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  # Debian's Chromium for the browser tests (Playwright cannot download its own here).
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check -r requirements.txt
python3 -m ruff check .
python3 -m pytest "$@"
