#!/usr/bin/env bash
# Sets up and starts the Gatehouse desktop app on a scratch site (./demo-site),
# under Xvfb when there is no display. The CLI is target/release/gatehouse.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh
cargo build --release --workspace
site="${GATEHOUSE_SITE:-$PWD/demo-site}"
[ -f "$site/gatehouse.toml" ] || target/release/gatehouse site init "$site" --scratch
export GATEHOUSE_SITE="$site"
echo "site: $site   cli: $PWD/target/release/gatehouse"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec target/release/gatehouse-desktop
else
  echo "no display: running under xvfb-run (screenshot with: import -window root shot.png)"
  exec xvfb-run -a target/release/gatehouse-desktop
fi
