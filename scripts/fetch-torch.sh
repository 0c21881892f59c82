#!/usr/bin/env bash
# Installs real PyTorch from PyPI into a virtual environment cached outside
# the source tree, and prints the path of its python.
#
#   scripts/fetch-torch.sh            # torch 2.15.0: install if absent, print the python
#   scripts/fetch-torch.sh --locate   # print the python if installed; exit 2 if not
#   scripts/fetch-torch.sh 2.15.0     # another release
#
# The cache is $NCCLWATCH_CACHE (default ~/.cache/ncclwatch)/torch-VERSION/,
# a venv whose torch brings its CUDA and NCCL wheels (nvidia-nccl-cu13):
# several GB, fetched once. Tests that need torch (tests/real) only locate
# it and are skipped with the reason when it is absent; CI runs this script
# first. Exit 0 with the python's path on stdout, 2 with one line on stderr
# when it cannot be had (no network, no python3 with venv).
set -uo pipefail

locate_only=0
if [[ "${1:-}" == "--locate" ]]; then locate_only=1; shift; fi
case "${1:-}" in
  -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
version=${1:-2.15.0}
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "fetch-torch: '$version' is not a PyTorch release (like 2.15.0)" >&2; exit 2
fi
venv="${NCCLWATCH_CACHE:-$HOME/.cache/ncclwatch}/torch-$version"
python="$venv/bin/python"

installed() {
  [[ -x "$python" ]] &&
    "$python" -c "import sys, torch; sys.exit(0 if torch.__version__.split('+')[0] == '$version' else 1)" \
      >/dev/null 2>&1
}

if installed; then echo "$python"; exit 0; fi
if (( locate_only )); then
  echo "fetch-torch: torch $version is not installed in $venv (run scripts/fetch-torch.sh $version)" >&2
  exit 2
fi
host=$(command -v python3 || true)
if [[ -z "$host" ]]; then echo "fetch-torch: python3 is needed" >&2; exit 2; fi
if [[ ! -x "$python" ]] && ! "$host" -m venv "$venv" >/dev/null 2>&1; then
  echo "fetch-torch: could not make a venv in $venv (python3 -m venv)" >&2; exit 2
fi
log=$(mktemp)
if ! "$python" -m pip install --quiet "torch==$version" >"$log" 2>&1; then
  echo "fetch-torch: could not install torch==$version: $(tail -1 "$log")" >&2
  rm -f "$log"; exit 2
fi
rm -f "$log"
if ! installed; then echo "fetch-torch: torch $version does not import from $venv" >&2; exit 2; fi
echo "$python"
