#!/usr/bin/env bash
# Installs everything comis needs on a Debian/Ubuntu machine, then builds it.
#   - system packages (bubblewrap for the jail, jq for ResultRef slicing) via apt-get, only when missing
#   - npm dependencies (npm ci), skipped when node_modules already matches package-lock.json
#   - the build (dist/, oclif.manifest.json, docs/config.schema.json)
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      # Not root and no sudo: say what is missing and how to get it, instead of failing on `sudo`.
      echo "setup: missing system packages: ${missing[*]}" >&2
      echo "setup: as root, run:  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
      echo "setup: then run ./scripts/setup.sh again" >&2
      exit 2
    fi
    sudo_cmd=(sudo)
  fi
  echo "setup: installing system packages: ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f node_modules/.comis-lock-hash ] || [ "$(cat node_modules/.comis-lock-hash)" != "$lock_hash" ]; then
  echo "setup: npm ci (better-sqlite3 compiles from source: this takes a few minutes)"
  # npm ci runs the package's `prepare` script, which builds comis.
  npm ci --no-audit --no-fund
  echo "$lock_hash" > node_modules/.comis-lock-hash
else
  echo "setup: building"
  npm run --silent build
fi
