#!/usr/bin/env bash
# Build the GPU Space's image as a Space builds it, start it as a Space starts it, and use it:
# JupyterLab must refuse requests without the token, and every notebook must run all its cells
# (live when the container sees a GPU, in replay otherwise).
#
#   space/check_image.sh                     # needs a Docker daemon that can pull python:3.11-slim
#   WHEELS=/opt/wheels space/check_image.sh  # pip reads this folder of wheels first (a CPU torch)
#
# It lays out the Space repository with space/assemble.sh, builds it with host networking (the
# build reaches PyPI, and the WHEELS server on 127.0.0.1), runs the container with a JUPYTER_TOKEN
# and a SPACE_ID as a Space does, and runs space/run_on_server.py inside it. It prints the build
# time, the image size and one line per notebook, and exits non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGE="${IMAGE:-attention-profiled-space:check}"
NAME="attention-profiled-check-$$"
WORK="$(mktemp -d)"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cleanup() {
  docker rm -f "$NAME" >/dev/null 2>&1 || true
  [ -n "${WHEEL_SERVER:-}" ] && kill "$WHEEL_SERVER" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

bash "$ROOT/space/assemble.sh" "$WORK/space"

build_args=()
if [ -n "${WHEELS:-}" ]; then
  wheel_port="$(free_port)"
  python3 -m http.server --bind 127.0.0.1 "$wheel_port" --directory "$WHEELS" >/dev/null 2>&1 &
  WHEEL_SERVER=$!
  build_args+=(--build-arg "PIP_FIND_LINKS=http://127.0.0.1:$wheel_port/")
fi

# the legacy builder needs no buildx plugin, and the Dockerfile uses nothing that only BuildKit has
started=$(date +%s)
DOCKER_BUILDKIT="${DOCKER_BUILDKIT:-0}" docker build --network=host "${build_args[@]}" -t "$IMAGE" "$WORK/space" \
  > "$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; echo "check_image: the build failed" >&2; exit 1; }
echo "check_image: built $IMAGE in $(( $(date +%s) - started )) s, $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.2f GB", $1 / 1e9}')"

port="$(free_port)"
token="$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
gpus=()
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then gpus=(--gpus all); fi
docker run -d --name "$NAME" --network=host "${gpus[@]}" -e JUPYTER_TOKEN="$token" \
  -e SPACE_ID=check/attention-profiled -e ATTN_PROFILED_PORT="$port" "$IMAGE" >/dev/null
for _ in $(seq 120); do
  code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/status" || true)"
  [ "$code" = 403 ] && break
  sleep 1
done
[ "$code" = 403 ] || { docker logs "$NAME" | tail -40; echo "check_image: JupyterLab did not answer 403 without a token" >&2; exit 1; }
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: token $token" "http://127.0.0.1:$port/api/status")" = 200 ]
echo "check_image: JupyterLab is up on port $port; 403 without the token, 200 with it"

docker exec "$NAME" sh -c 'printf %s "$JUPYTER_TOKEN" > /tmp/token && cd notebooks &&
  python ../space/run_on_server.py --url "http://127.0.0.1:$ATTN_PROFILED_PORT" --token-file /tmp/token *.ipynb'
