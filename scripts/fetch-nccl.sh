#!/usr/bin/env bash
# Fetches real NCCL builds from PyPI's nvidia-nccl-cu12 / nvidia-nccl-cu13
# wheels into a cache outside the source tree, and prints, one per line,
# "VERSION PATH" for each libnccl.so.2 it has.
#
#   scripts/fetch-nccl.sh 2.18.3 2.21.5 2.32.3     # these releases
#   scripts/fetch-nccl.sh --ci                      # the releases CI tests (oldest, newest)
#   scripts/fetch-nccl.sh --all                     # the verified matrix (one per minor release)
#   scripts/fetch-nccl.sh --newest                  # the newest release only (the build's headers)
#
# The cache is $NCCLWATCH_CACHE (default ~/.cache/ncclwatch)/nccl/VERSION/:
# libnccl.so.2 and include/ (nccl.h, nccl_device.h, nccl_device/...), the
# headers the wheel ships. A release already there is not fetched again.
# cu12 wheels are used up to 2.27.6 (the first cu13 wheel is 2.27.7); later
# releases come from cu13. A wheel is about 200-300 MB; it is deleted once
# those files are out of it.
# Exit 0 when every release asked for is in the cache, 2 otherwise (no
# network, unknown version), with one line on stderr per failure.
set -uo pipefail

ALL_RELEASES=(2.18.3 2.19.3 2.20.5 2.21.5 2.22.3 2.23.4 2.24.3 2.25.1 2.26.5 2.27.7 2.28.9
              2.29.7 2.30.7 2.31.2 2.32.3)
CI_RELEASES=("${ALL_RELEASES[0]}" "${ALL_RELEASES[-1]}")

cache="${NCCLWATCH_CACHE:-$HOME/.cache/ncclwatch}/nccl"
case "${1:-}" in
  --ci) set -- "${CI_RELEASES[@]}" ;;
  --all) set -- "${ALL_RELEASES[@]}" ;;
  --newest) set -- "${ALL_RELEASES[-1]}" ;;
  -h|--help|"") sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac

python=$(command -v python3 || true)
if [[ -z "$python" ]]; then echo "fetch-nccl: python3 is needed (pip and zipfile)" >&2; exit 2; fi

# Picks the wheel that carries VERSION: cu13 from 2.27.7 on, cu12 before.
package_for() {
  local v=$1
  if [[ "$(printf '%s\n%s\n' "$v" 2.27.7 | sort -V | head -1)" == "2.27.7" ]]; then
    echo nvidia-nccl-cu13
  else
    echo nvidia-nccl-cu12
  fi
}

status=0
for version in "$@"; do
  if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(\.post[0-9]+)?$ ]]; then
    echo "fetch-nccl: '$version' is not an NCCL release (like 2.21.5)" >&2; status=2; continue
  fi
  dest="$cache/$version"
  # A release fetched by an older version of this script has nccl.h beside
  # the library and no include/: fetched again.
  if [[ ! -f "$dest/libnccl.so.2" || ! -f "$dest/include/nccl.h" ]]; then
    tmp=$(mktemp -d)
    pkg=$(package_for "$version")
    if ! "$python" -m pip download --quiet --no-deps --only-binary=:all: \
          --dest "$tmp" "$pkg==$version" >"$tmp/pip.log" 2>&1; then
      echo "fetch-nccl: could not download $pkg==$version: $(tail -1 "$tmp/pip.log")" >&2
      rm -rf "$tmp"; status=2; continue
    fi
    mkdir -p "$dest"
    if ! "$python" - "$tmp" "$dest" <<'PY'
import glob, os, shutil, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
wheels = glob.glob(os.path.join(tmp, "*.whl"))
if not wheels:
    sys.exit("no wheel downloaded")
# The headers go to a fresh folder, renamed into place whole.
staging = os.path.join(dest, "include.part")
shutil.rmtree(staging, ignore_errors=True)
with zipfile.ZipFile(wheels[0]) as z:
    for name in z.namelist():
        parts = name.split("/")
        if "include" in parts and not name.endswith("/"):
            rel = parts[parts.index("include") + 1:]
            if not rel or any(p in ("", ".", "..") for p in rel):
                continue
            out = os.path.join(staging, *rel)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with z.open(name) as src, open(out, "wb") as f:
                shutil.copyfileobj(src, f)
        elif os.path.basename(name) == "libnccl.so.2":
            part = os.path.join(dest, "libnccl.so.2.part")
            with z.open(name) as src, open(part, "wb") as f:
                shutil.copyfileobj(src, f)
            os.replace(part, os.path.join(dest, "libnccl.so.2"))
if not os.path.exists(os.path.join(staging, "nccl.h")):
    sys.exit("the wheel has no include/nccl.h")
shutil.rmtree(os.path.join(dest, "include"), ignore_errors=True)
os.replace(staging, os.path.join(dest, "include"))
try:
    os.remove(os.path.join(dest, "nccl.h"))  # where older versions of this script put it
except FileNotFoundError:
    pass
if not os.path.exists(os.path.join(dest, "libnccl.so.2")):
    sys.exit("the wheel has no libnccl.so.2")
PY
    then
      echo "fetch-nccl: $pkg==$version: could not extract libnccl.so.2 and its headers" >&2
      rm -rf "$tmp"; status=2; continue
    fi
    rm -rf "$tmp"
  fi
  echo "$version $dest/libnccl.so.2"
done
exit $status
