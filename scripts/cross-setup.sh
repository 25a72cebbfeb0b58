#!/usr/bin/env bash
# What the cross checks need on Debian 12 (as root; idempotent): the Rust targets
# for Windows and macOS, mingw-w64 (Windows C toolchain) and zig from PyPI
# (the macOS C toolchain, see scripts/zig-cc).
set -euo pipefail
export PATH="$HOME/.cargo/bin:$PATH"
installed="$(rustup target list --installed)"
for t in x86_64-pc-windows-gnu aarch64-apple-darwin x86_64-apple-darwin; do
  grep -qx "$t" <<<"$installed" || rustup target add "$t"
done
if ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends gcc-mingw-w64-x86-64 >/dev/null
fi
venv="${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse-zig"
# Pinned: zig's driver flags and bundled macOS headers change between releases.
zig_version=0.17.1
if [ "$("$venv/bin/python" -m ziglang version 2>/dev/null)" != "$zig_version" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "ziglang==$zig_version"
fi
