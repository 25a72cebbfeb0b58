#!/usr/bin/env bash
# Installs what the cross checks and the Windows package need on Debian 12, as root
# (scripts/setup.sh calls it). Idempotent: each step is skipped when its result is there.
#   - rustup targets x86_64-pc-windows-gnu, aarch64-apple-darwin, x86_64-apple-darwin;
#   - mingw-w64 (C compiler and binutils for the Windows target's build scripts and links),
#     wixl and msitools (the MSI), wine64 (installs and runs it in the package test),
#     squashfs-tools (the AppImage and its runtime's tests);
#   - zig from PyPI (`ziglang`) in a venv, GATEHOUSE_ZIG (default below): the C compiler
#     and archiver for the macOS targets' build scripts (scripts/cross/zig-cc, zig-ar).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"

need_apt=()
for p in gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64 wixl msitools wine64 squashfs-tools \
         python3-venv file; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$p")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "cross setup: installing ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

installed=$(rustup target list --installed)
for t in x86_64-pc-windows-gnu aarch64-apple-darwin x86_64-apple-darwin; do
  grep -qx "$t" <<<"$installed" || rustup target add "$t"
done

# zig, pinned: the version the macOS cross check was proven with (2026-12-04).
zig_version=0.17.1
zig_python=${GATEHOUSE_ZIG:-/opt/gatehouse-tools/zig-venv/bin/python}
if [ "$("$zig_python" -m ziglang version 2>/dev/null)" != "$zig_version" ]; then
  venv=$(dirname "$(dirname "$zig_python")")
  echo "cross setup: ziglang $zig_version into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "ziglang==$zig_version"
fi
