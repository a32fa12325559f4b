#!/usr/bin/env bash
# Lay out the repository of the Hugging Face Space in OUTDIR: the book's committed files, with
# the Space's own README.md (its YAML header configures the Space) and its Dockerfile at the root.
#
#   space/assemble.sh /tmp/attention-profiled-space
#   hf upload <you>/<space> /tmp/attention-profiled-space . --repo-type space
set -euo pipefail
OUT="${1:?usage: space/assemble.sh OUTDIR}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$OUT"
git -C "$ROOT" archive --format=tar HEAD | tar -x -C "$OUT"
cp "$ROOT/README.md" "$OUT/BOOK_README.md"
cp "$ROOT/space/README.md" "$OUT/README.md"
cp "$ROOT/space/Dockerfile" "$OUT/Dockerfile"
cp "$ROOT/space/Dockerfile.dockerignore" "$OUT/.dockerignore"
echo "Space repository laid out in $OUT (from $(git -C "$ROOT" rev-parse --short HEAD))"
