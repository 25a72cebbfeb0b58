#!/usr/bin/env bash
# Installs everything Gatehouse needs to build, run and test on Debian 12, as root.
# Idempotent: each step is skipped when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
pkgs=(build-essential pkg-config libssl-dev libwebkit2gtk-4.1-dev webkit2gtk-driver xvfb xauth
      fonts-dejavu-core sqlite3 postgresql python3 python3-venv curl ca-certificates bubblewrap
      squashfs-tools)
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$p")
done
command -v node >/dev/null && command -v npm >/dev/null || need_apt+=(nodejs npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then export PATH="$HOME/.cargo/bin:$PATH"; else
    curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component rustfmt,clippy
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi
rustup component list --installed 2>/dev/null | grep -q clippy || rustup component add clippy rustfmt 2>/dev/null || true

# Rust targets and C toolchains of the cross checks (Windows, macOS).
bash scripts/cross-setup.sh

# The WebDriver bridge for the desktop E2E tests (major 2: crates.io "latest" is a 3.0 alpha).
if ! command -v tauri-driver >/dev/null && [ ! -x "$HOME/.cargo/bin/tauri-driver" ]; then
  cargo install tauri-driver --locked --version "^2"
fi

# The UI must be built before any default-feature cargo build (tauri embeds ui/dist).
bash scripts/ui-build.sh
