# Sourced by main.sh and test.sh: set up (idempotent, see setup.sh), put the virtualenv first on
# PATH and work from the repository root.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
export PATH="${MINITRACE_VENV:-$ROOT/.venv}/bin:$PATH"
cd "$ROOT"
