#!/usr/bin/env bash
# Builds the Windows installer into target/package/:
#   Gatehouse-<version>-x86_64.msi   gatehouse-desktop.exe + gatehouse.exe, per user, on PATH,
#                                    a Start-menu shortcut, an uninstall entry
# from a cross build for x86_64-pc-windows-gnu (mingw-w64 from Debian) and msitools' wixl
# (packaging/windows/gatehouse.wxs). Tauri's own Windows bundler downloads WiX/NSIS and
# WebView2 tools, which cannot be fetched here (docs/decisions.md, "The Windows installer").
# The desktop app needs the WebView2 runtime on the Windows machine (part of Windows 11 and
# of an updated Windows 10); the installer does not carry it.
# GATEHOUSE_PACKAGE_PROFILE=dev packages a debug build (as scripts/package.sh does); release
# is the default. Run as root on Debian 12; installs the tools it needs (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR=never
# As scripts/wine-test.sh builds (the flag is part of cargo's fingerprint: a different one
# would rebuild its gatehouse.exe).
export CARGO_INCREMENTAL=0
say() { printf '==> [package-windows %dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

need=()
for p in gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64 wixl msitools; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
rustup target list --installed | grep -qx x86_64-pc-windows-gnu || rustup target add x86_64-pc-windows-gnu
[ -f ui/dist/index.html ] || bash scripts/ui-build.sh

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
target_dir=$(cargo metadata --no-deps --format-version 1 |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
out=target/package
stage=$out/windows
rm -rf "$stage" "$out"/*.msi
mkdir -p "$stage"

case "${GATEHOUSE_PACKAGE_PROFILE:-release}" in
  release) profile_dir=release; profile_args=(--release) ;;
  dev) profile_dir=debug; profile_args=() ;;
  *) echo "GATEHOUSE_PACKAGE_PROFILE must be release or dev" >&2; exit 1 ;;
esac
# Two builds, each the command another step already runs, so the test command reuses
# scripts/wine-test.sh's gatehouse.exe (one `-p` per build: selecting both packages at once
# unifies their features and rebuilds the CLI's dependencies a second way).
t=$SECONDS
say "cargo build ${profile_args[*]} --target x86_64-pc-windows-gnu -p gatehouse-cli --bin gatehouse"
cargo build "${profile_args[@]}" --target x86_64-pc-windows-gnu -p gatehouse-cli --bin gatehouse
say "gatehouse.exe took $((SECONDS - t)) s"
t=$SECONDS
say "cargo build ${profile_args[*]} --target x86_64-pc-windows-gnu -p gatehouse-desktop --bin gatehouse-desktop"
cargo build "${profile_args[@]}" --target x86_64-pc-windows-gnu -p gatehouse-desktop --bin gatehouse-desktop
say "gatehouse-desktop.exe took $((SECONDS - t)) s"
bin="$target_dir/x86_64-pc-windows-gnu/$profile_dir"
for exe in gatehouse-desktop.exe gatehouse.exe; do
  x86_64-w64-mingw32-strip -o "$stage/$exe" "$bin/$exe"
done

say "wixl packaging/windows/gatehouse.wxs"
msi="$out/Gatehouse-${version}-x86_64.msi"
# wixl reads Source paths relative to the current folder (this checkout).
wixl -a x64 -D Version="$version" -D Bin="$stage" -o "$msi" packaging/windows/gatehouse.wxs
# PATH: wixl has no <Environment>, so the table is added here, with the two standard actions
# at their standard places in the sequence. "=-PATH" sets on install and removes on
# uninstall, in the user's environment; "[~];" appends to what is there.
printf 'Environment\tName\tValue\tComponent_\ns72\tl255\tL255\ts72\nEnvironment\tEnvironment\n' > "$stage/Environment.idt"
printf 'UserPath\t=-PATH\t[~];[INSTALLDIR]\tPrograms\n' >> "$stage/Environment.idt"
msiinfo export "$msi" InstallExecuteSequence > "$stage/InstallExecuteSequence.idt"
printf 'RemoveEnvironmentStrings\t\t3300\nWriteEnvironmentStrings\t\t5200\n' >> "$stage/InstallExecuteSequence.idt"
msibuild "$msi" -i "$stage/Environment.idt" -i "$stage/InstallExecuteSequence.idt"

say "built:"
ls -l "$msi"
