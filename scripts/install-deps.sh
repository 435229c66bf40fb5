#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs, with apt, the Debian 12 packages that backoff needs to build, test and plot.
# Idempotent: asks apt only for what is missing, so a second run does nothing and needs no network.
# Usage: scripts/install-deps.sh [extra-package ...]   (run as root, or with sudo available)
set -euo pipefail

# python3-h11: the HTTP differential test judges serve's and proxy's framing with h11, a strict
# HTTP/1.1 parser written apart from Beast.
# universal-ctags: the size check finds each function's first and last line with it.
# zsh and groff-base: the tests parse the generated zsh completion and format backoff(1).
# slurm-wlm and munge: the test slurm_sweep_one_node runs an emitted sweep on a real one-node Slurm
# (tests/cluster/slurm_cluster.sh starts its own daemons under a temporary folder; the packages'
# own services are neither needed nor touched).
# pkgconf: Debian 12's pkg-config (the `pkg-config` package is a transitional one that pulls it
# in); the test consumer_pkg_config compiles against the installed backoff.pc with it.
packages=(
  build-essential cmake ninja-build pkgconf git
  libboost1.81-dev
  libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  zlib1g-dev
  zsh groff-base
  gnuplot-nox
  python3-h11
  universal-ctags
  slurm-wlm munge
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "install-deps: missing packages (${missing[*]}) and not root; install them or rerun as root" >&2; exit 1; }
  sudo_cmd=(sudo)
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
