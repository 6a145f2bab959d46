#!/usr/bin/env bash
# Installs the Debian 12 packages SpringSkin builds, tests and demos with.
# Idempotent: only missing packages are installed (apt-get update first).
set -euo pipefail
packages=(
  build-essential cmake pkg-config
  libassimp-dev assimp-testmodels
  libcmocka-dev
  libegl-dev libgl-dev libglew-dev libcglm-dev libpng-dev libcairo2-dev
  libjson-c-dev
  libxxhash-dev
  libmurmurhash-dev
  libsuitesparse-dev
  liblapack-dev
  python3-pytest python3-numpy python3-scipy
  python3-dask python3-distributed
  python3-dev python3-hypothesis python3-setuptools python3-wheel python3-pip
  libegl-mesa0 libgl1-mesa-dri
  blender
  xvfb xdotool imagemagick tesseract-ocr
  clang libclang-rt-14-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
