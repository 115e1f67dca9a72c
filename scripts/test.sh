#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what it needs, then runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
# Debian's Chromium for the browser tests (Playwright cannot download its own here);
# nginx for the two-server scale-out test.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
# ip (network namespaces: the partition test's own database host) and runuser (its own PostgreSQL server).
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || missing+=(iproute2)
command -v runuser >/dev/null 2>&1 || missing+=(util-linux)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check -r requirements-dev.txt
python3 -m pip install -q --disable-pip-version-check --no-deps -e .  # the package itself (dependencies: the line above)
python3 -m ruff check .
python3 -m ruff format --check .
# The data model, the readers and the computation (formats/, metrics/) are typed strictly (pyproject.toml's [tool.mypy]).
python3 -m mypy --strict formats metrics
# The docs site (docs/, mkdocs.yml): a broken link or anchor, or a generated part that fails, fails the run.
site_dir="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 python3 -m mkdocs build --strict --quiet --site-dir "$site_dir"
rm -rf "$site_dir"
python3 -m pytest "$@"
