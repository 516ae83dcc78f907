#!/usr/bin/env bash
# Set up (idempotent, see setup.sh) and run the main job end to end on the bundled default:
# `minitrace demo` (see `minitrace demo --help` for what each step does).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
VENV="${MINITRACE_VENV:-$ROOT/.venv}"
export PATH="$VENV/bin:$PATH"
cd "$ROOT"
minitrace demo -o "${1:-out}"
