#!/usr/bin/env bash
# Start JupyterLab on the book's notebooks: the GPU Space's entry point, and usable on any machine.
#
#   space/start.sh                       # 0.0.0.0:7860, token required
#   ATTN_PROFILED_PORT=8899 ATTN_PROFILED_HOST=127.0.0.1 space/start.sh
#
# The token is always on. It is read from JUPYTER_TOKEN (on a Space: a secret of that name) or
# from the file JUPYTER_TOKEN_FILE names. With neither, one is generated and written to
# $ATTN_PROFILED_TOKEN_FILE (default ~/.attention_profiled_jupyter_token, mode 600), and this
# script prints where it is, never the token itself. On a Hugging Face Space (SPACE_ID is set)
# with no JUPYTER_TOKEN secret it refuses to start: a generated token could only reach you
# through the Space's logs. A token shorter than 32 characters (an empty one turns authentication
# off) is refused, from either source.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOST="${ATTN_PROFILED_HOST:-0.0.0.0}"
PORT="${ATTN_PROFILED_PORT:-${PORT:-7860}}"
NOTEBOOKS="${ATTN_PROFILED_NOTEBOOKS:-$ROOT/notebooks}"

if [ -z "${JUPYTER_TOKEN:-}" ] && [ -z "${JUPYTER_TOKEN_FILE:-}" ]; then
  if [ -n "${SPACE_ID:-}" ]; then
    echo "start.sh: this Space has no JUPYTER_TOKEN secret. Add one under Settings -> Variables and" >&2
    echo "secrets (a long random string, e.g. python -c 'import secrets; print(secrets.token_hex(24))')," >&2
    echo "then restart the Space. JupyterLab never runs here without a token." >&2
    exit 2
  fi
  TOKEN_FILE="${ATTN_PROFILED_TOKEN_FILE:-$HOME/.attention_profiled_jupyter_token}"
  mkdir -p "$(dirname "$TOKEN_FILE")"
  (umask 077 && python3 -c 'import secrets; print(secrets.token_hex(24), end="")' > "$TOKEN_FILE")
  export JUPYTER_TOKEN_FILE="$TOKEN_FILE"
  echo "start.sh: JUPYTER_TOKEN is not set; generated a token and wrote it to $TOKEN_FILE (mode 600)."
  echo "start.sh: open http://$HOST:$PORT/lab and paste it, or http://$HOST:$PORT/lab?token=\$(cat $TOKEN_FILE)"
fi

# An empty token turns JupyterLab's authentication off, and a short one can be guessed: refuse
# both, from either source (JUPYTER_TOKEN wins over JUPYTER_TOKEN_FILE, as in Jupyter Server).
# The token is never printed, only its length.
MIN_TOKEN=32
if [ -n "${JUPYTER_TOKEN:-}" ]; then
  TOKEN_SOURCE="JUPYTER_TOKEN"
  TOKEN="$JUPYTER_TOKEN"
else
  TOKEN_SOURCE="the file JUPYTER_TOKEN_FILE names ($JUPYTER_TOKEN_FILE)"
  if [ ! -r "$JUPYTER_TOKEN_FILE" ]; then
    echo "start.sh: cannot read $TOKEN_SOURCE; JupyterLab never runs without a token." >&2
    exit 2
  fi
  TOKEN="$(cat -- "$JUPYTER_TOKEN_FILE")"
fi
TOKEN="${TOKEN//[[:space:]]/}"
if [ "${#TOKEN}" -lt "$MIN_TOKEN" ]; then
  echo "start.sh: the token from $TOKEN_SOURCE is ${#TOKEN} characters long; at least $MIN_TOKEN are" >&2
  echo "needed (an empty token would turn authentication off). Make one with" >&2
  echo "python -c 'import secrets; print(secrets.token_hex(24))'. JupyterLab was not started." >&2
  exit 2
fi
unset TOKEN

# the book's JupyterLab settings (space/jupyter-config: no "Jupyter news?" prompt), ahead of any
# the machine has
export JUPYTER_CONFIG_PATH="$ROOT/space/jupyter-config${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"

args=(
  --ip="$HOST" --port="$PORT" --no-browser
  --ServerApp.root_dir="$NOTEBOOKS"
  # the book's machines (and a Space) need nothing from the network: no news, no update checks
  --LabApp.news_url=None
  --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate
)
if [ -n "${SPACE_ID:-}" ]; then
  # a Space shows its app in an iframe on huggingface.co, served from <owner>-<space>.hf.space:
  # allow that one embedder, and send the login cookie to it (over https only)
  args+=(
    "--ServerApp.tornado_settings={'headers': {'Content-Security-Policy': \"frame-ancestors 'self' https://huggingface.co\"}}"
    "--ServerApp.cookie_options={'SameSite': 'None', 'Secure': True}"
  )
fi
if [ "$(id -u)" = 0 ]; then
  args+=(--allow-root)  # containers and CI often run as root; a Space runs as uid 1000
fi

# each notebook's kernel imports torch (and opens the CUDA context) and the helpers as it starts,
# while the reader reads the page's first lines, not in its first code cell (space/kernel_startup.py;
# PYTHONSTARTUP is run by IPython's kernel, and skipped by any other python). A PYTHONSTARTUP of
# the machine's own is kept.
export PYTHONSTARTUP="${PYTHONSTARTUP:-$ROOT/space/kernel_startup.py}"

cd "$ROOT"
exec jupyter lab "${args[@]}"
