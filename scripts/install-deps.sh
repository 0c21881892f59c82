#!/usr/bin/env bash
# Installs the Debian packages ncclwatch builds with, if any is missing.
# CUDA and NCCL are not installed here: they are expected at /usr/local/cuda
# (or pass CUDAToolkit_ROOT / NCCL_ROOT to cmake).
set -euo pipefail

# clang (with libFuzzer's runtime) builds the fuzzers; clang-format checks the
# formatting (scripts/fuzz.sh, scripts/check-format.sh); ccache lets
# scripts/test.sh's two builds share what they compile alike.
packages=(cmake g++ ninja-build libabsl-dev libre2-dev libprotobuf-dev protobuf-compiler catch2 libbenchmark-dev iproute2
  clang libclang-rt-14-dev clang-format ccache)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
