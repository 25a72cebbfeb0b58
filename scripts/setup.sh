#!/usr/bin/env bash
# Installs everything Gatehouse needs to build, run and test on Debian 12, as root.
# Idempotent: each step is skipped when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
pkgs=(build-essential pkg-config libssl-dev libwebkit2gtk-4.1-dev webkit2gtk-driver xvfb xauth
      fonts-dejavu-core sqlite3 postgresql python3 python3-venv curl ca-certificates bubblewrap
      squashfs-tools dbus-daemon dbus-bin gnome-keyring)
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$p")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# Node: vite 7 and happy-dom need ^20.19 or >=22.12 (ui/package.json "engines"), and
# Debian 12 ships Node 18; a missing or older node is replaced by NodeSource's 22.x
# (a signed apt repository, so later upgrades come through apt).
node_ok() {
  command -v node >/dev/null && command -v npm >/dev/null &&
    node -e 'const [a, b] = process.versions.node.split(".").map(Number);
             process.exit((a === 20 && b >= 19) || (a === 22 && b >= 12) || a > 22 ? 0 : 1)'
}
if ! node_ok; then
  echo "setup: node ${node_v:=$(node --version 2>/dev/null || echo missing)} is too old for the UI; installing Node 22 from NodeSource"
  install -d -m 0755 /etc/apt/keyrings
  curl -fsSL https://deb.nodesource.com/gpgkey/nodesource-repo.gpg.key -o /etc/apt/keyrings/nodesource.asc
  echo "deb [signed-by=/etc/apt/keyrings/nodesource.asc] https://deb.nodesource.com/node_22.x nodistro main" \
    >/etc/apt/sources.list.d/nodesource.list
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq nodejs >/dev/null
  node_ok || { echo "setup: node $(node --version 2>/dev/null) still does not satisfy ^20.19.0 || >=22.12.0" >&2; exit 1; }
fi

if ! command -v cargo >/dev/null; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then export PATH="$HOME/.cargo/bin:$PATH"; else
    curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component rustfmt,clippy
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi
# The toolchain pinned in rust-toolchain.toml, with rustfmt and clippy. Installed only
# when missing: `rustup toolchain install` on a present toolchain may reinstall it,
# which breaks any build running at that moment.
toolchain=$(sed -n 's/^channel = "\(.*\)"/\1/p' rust-toolchain.toml)
rustup run "$toolchain" rustc --version >/dev/null 2>&1 ||
  rustup toolchain install "$toolchain" --profile minimal --component rustfmt,clippy
rustup run "$toolchain" cargo clippy --version >/dev/null 2>&1 &&
  rustup run "$toolchain" rustfmt --version >/dev/null 2>&1 ||
  rustup component add --toolchain "$toolchain" clippy rustfmt

# Rust targets and C toolchains of the cross checks (Windows, macOS).
bash scripts/cross-setup.sh

# The WebDriver bridge for the desktop E2E tests (major 2: crates.io "latest" is a 3.0 alpha).
if ! command -v tauri-driver >/dev/null && [ ! -x "$HOME/.cargo/bin/tauri-driver" ]; then
  cargo install tauri-driver --locked --version "^2"
fi

# The UI must be built before any default-feature cargo build (tauri embeds ui/dist).
bash scripts/ui-build.sh
