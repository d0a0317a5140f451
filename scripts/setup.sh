#!/usr/bin/env bash
# Installs everything ortc needs on a fresh Debian 12 machine, idempotently:
# Debian packages (LLVM/MLIR 22, protobuf, ONNX's protos, GoogleTest, Ninja,
# ccache, clang-22 and its sanitizer and libFuzzer runtimes for the sanitizer
# builds) and a project-local Python environment (.venv) with pinned packages.
# Run as root (or with sudo available). Safe to run again: it skips what is there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libonnx-dev libprotobuf-dev protobuf-compiler
  libgtest-dev googletest
  liblld-22-dev libflatbuffers-dev flatbuffers-compiler libxxhash-dev
  cmake ninja-build ccache g++ python3 python3-venv
  clang-22 libclang-rt-22-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Python environment for test models and the numerical reference.
VENV="$ROOT/.venv"
REQ="$ROOT/scripts/requirements.txt"
STAMP="$VENV/.requirements.sha256"
want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [[ ! -x "$VENV/bin/python" || ! -f "$STAMP" || "$(cat "$STAMP")" != "$want" ]]; then
  echo "setup: creating $VENV with scripts/requirements.txt"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ"
  echo "$want" > "$STAMP"
fi
