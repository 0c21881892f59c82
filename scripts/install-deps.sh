#!/usr/bin/env bash
# Installs the Debian packages ncclwatch builds with, if any is missing.
# CUDA and NCCL are not installed here: they are expected at /usr/local/cuda
# (or pass CUDAToolkit_ROOT / NCCL_ROOT to cmake).
#
#   scripts/install-deps.sh            what the build and the tests need
#   scripts/install-deps.sh --cluster  also what the cluster tests
#                                      (tests/cluster/) run: Slurm and
#                                      munge, podman and runc, Prometheus
#                                      and node_exporter. These are
#                                      optional: what cannot be installed
#                                      is named, and the tests that need it
#                                      report themselves skipped.
set -euo pipefail

cluster=0
case "${1:-}" in
  "") ;;
  --cluster) cluster=1 ;;
  *)
    echo "usage: $0 [--cluster]" >&2
    exit 2
    ;;
esac

# clang (with libFuzzer's runtime) builds the fuzzers; clang-format checks the
# formatting (scripts/fuzz.sh, scripts/check-format.sh); ccache lets
# scripts/test.sh's two builds share what they compile alike.
packages=(cmake g++ ninja-build libabsl-dev libre2-dev libprotobuf-dev protobuf-compiler catch2 libbenchmark-dev iproute2
  clang libclang-rt-14-dev clang-format ccache)
# The cluster tests: Slurm's controller, node daemon and clients with munge;
# podman with runc (crun refuses this machine's hybrid cgroups); Prometheus
# (and promtool) with node_exporter's textfile collector; jq and curl to read
# their answers.
cluster_packages=(slurmctld slurmd slurm-client munge podman runc prometheus prometheus-node-exporter
  jq curl util-linux python3)

missing_of() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo=sudo
fi
updated=0
install() {  # PACKAGE...
  if [[ -n $sudo ]] && ! command -v sudo >/dev/null; then
    echo "install-deps: need root (or sudo) to install $*" >&2
    return 1
  fi
  if ((!updated)); then
    $sudo apt-get update -qq || return 1
    updated=1
  fi
  # The packages' services (munge, slurmctld, ...) are not started: the
  # tests start their own, with their own configuration. Debian's way is a
  # policy-rc.d that says no, put there for the install where none is.
  local policy=/usr/sbin/policy-rc.d placed=0 rc=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\n# scripts/install-deps.sh, while it installs\nexit 101\n' | $sudo tee "$policy" >/dev/null &&
      $sudo chmod 755 "$policy" && placed=1
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null || rc=$?
  if ((placed)); then $sudo rm -f "$policy"; fi
  return "$rc"
}

mapfile -t missing < <(missing_of "${packages[@]}")
if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}"
  install "${missing[@]}" || exit 1
fi

if ((cluster)); then
  mapfile -t missing < <(missing_of "${cluster_packages[@]}")
  if ((${#missing[@]} > 0)); then
    echo "install-deps: installing, for the cluster tests, ${missing[*]}"
    if ! install "${missing[@]}"; then
      # One at a time: what can be installed is, the rest is named.
      for p in "${missing[@]}"; do install "$p" || true; done
      mapfile -t left < <(missing_of "${missing[@]}")
      if ((${#left[@]} > 0)); then
        echo "install-deps: could not install ${left[*]}: the cluster tests that need them will be skipped" >&2
      fi
    fi
  fi
fi
exit 0
