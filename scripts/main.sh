#!/usr/bin/env bash
# Set up (idempotent, see setup.sh) and run the main job end to end on the bundled default:
# `minitrace demo` (see `minitrace demo --help` for what each step does).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
minitrace demo -o "${1:-out}"
