#!/usr/bin/env bash
# Builds the release packages into target/package/:
#   gatehouse_<version>_amd64.deb         (Tauri bundler: desktop app + /usr/bin/gatehouse)
#   Gatehouse-<version>-x86_64.AppImage   (assembled here: the bundler's AppImage step
#                                          downloads linuxdeploy, which is not reachable)
# One release build of both binaries (`cargo build --release --workspace --bins`), then
# `tauri bundle` (no second cargo build) and the AppImage from the .deb's files.
# Run as root on Debian 12; installs the packaging tools it needs (idempotent).
# GATEHOUSE_GIT_COMMIT names the commit when the tree has no .git (see build-support/).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR=never
say() { printf '==> [package %dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

# --- tools: squashfs for the AppImage --------------------------------------------------
need=()
for p in dpkg-dev squashfs-tools; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[ -x ui/node_modules/.bin/tauri ] && [ -f ui/dist/index.html ] || bash scripts/setup.sh

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
changelog_version=$(sed -n '1s/^gatehouse (\([^)]*\)).*/\1/p' packaging/deb/changelog)
if [ "$version" != "$changelog_version" ]; then
  echo "packaging/deb/changelog starts at $changelog_version but Cargo.toml says $version:" \
       "add a changelog entry for $version" >&2
  exit 1
fi
target_dir=$(cargo metadata --no-deps --format-version 1 |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
out=target/package
stage=$out/stage
rm -rf "$stage" "$out"/*.deb "$out"/*.AppImage
mkdir -p "$stage"

# --- one build of both binaries --------------------------------------------------------
# GATEHOUSE_PACKAGE_PROFILE=dev packages the debug build the test command already made
# (stripped), so CI tests the packaging without a second, release compile of the whole
# tree (docs/decisions.md, "Packages"). Releases use the default: release.
# The dev build is made as the test command makes it (`cargo test --no-run`: dev-dependency
# features unified in), else `cargo build` would recompile tauri with other features.
case "${GATEHOUSE_PACKAGE_PROFILE:-release}" in
  release) profile_dir=release; cargo_args=(build --release --workspace --bins); bundle_flags=() ;;
  dev) profile_dir=debug; cargo_args=(test --workspace --no-run); bundle_flags=(--debug) ;;
  *) echo "GATEHOUSE_PACKAGE_PROFILE must be release or dev" >&2; exit 1 ;;
esac
say "cargo ${cargo_args[*]}"
cargo "${cargo_args[@]}"
bin="$target_dir/$profile_dir"
if [ "$profile_dir" = debug ]; then
  # strip writes a new file, so the hard-linked copies under deps/ keep their symbols.
  strip "$bin/gatehouse" "$bin/gatehouse-desktop"
fi

# --- .deb: the paths below are the ones tauri.conf.json's bundle.linux.deb.files names
say "tauri bundle --bundles deb"
cp "$bin/gatehouse" "$stage/gatehouse"
gzip -9n -c packaging/deb/changelog > "$stage/changelog.gz"
rm -rf "$bin/bundle/deb"
# Depends: what the two binaries link, as dpkg-shlibdeps names it (a Debian build's
# ${shlibs:Depends}), merged into the bundler's config; the bundler adds libwebkit2gtk-4.1-0
# and libgtk-3-0 unversioned itself.
# dpkg-shlibdeps wants a source tree: debian/control and the binaries in a package tree.
mkdir -p "$stage/shlibs/debian/gatehouse/DEBIAN" "$stage/shlibs/debian/gatehouse/usr/bin"
printf 'Source: gatehouse\n\nPackage: gatehouse\nArchitecture: any\n' > "$stage/shlibs/debian/control"
cp "$bin/gatehouse-desktop" "$bin/gatehouse" "$stage/shlibs/debian/gatehouse/usr/bin/"
shlibs=$(cd "$stage/shlibs" && dpkg-shlibdeps -O debian/gatehouse/usr/bin/* | sed -n 's/^shlibs:Depends=//p')
rm -rf "$stage/shlibs"
[ -n "$shlibs" ] || { echo "dpkg-shlibdeps found no libraries" >&2; exit 1; }
SHLIBS="$shlibs" python3 -c 'import json, os
deps = [d.strip() for d in os.environ["SHLIBS"].split(",") if d.strip()]
print(json.dumps({"bundle": {"linux": {"deb": {"depends": deps}}}}))' > "$stage/deb-depends.json"
npx --prefix ui tauri bundle "${bundle_flags[@]}" --bundles deb --ci --config "$PWD/$stage/deb-depends.json" >/dev/null
deb="$out/gatehouse_${version}_amd64.deb"
cp "$bin/bundle/deb/Gatehouse_${version}_amd64.deb" "$deb"

# --- AppImage: our runtime (crates/gatehouse-appimage-runtime: extracts the squashfs to a
# per-version cache and runs AppRun) + a squashfs of the .deb's files.
say "AppImage"
runtime=$out/runtime-x86_64
if [ "$profile_dir" = release ]; then
  # Static (crt-static glibc: it starts on any x86_64 Linux), built for an explicit --target
  # so these flags leave the host build above untouched.
  say "cargo build --release -p gatehouse-appimage-runtime (static)"
  CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static" \
    cargo build --release -p gatehouse-appimage-runtime --target x86_64-unknown-linux-gnu
  cp "$target_dir/x86_64-unknown-linux-gnu/release/gatehouse-appimage-runtime" "$runtime"
  if readelf -d "$runtime" | grep -q NEEDED; then
    echo "the AppImage runtime must be static: $(readelf -d "$runtime" | grep NEEDED)" >&2; exit 1
  fi
else
  # The dev package uses the runtime the test build made (linked to this machine's glibc).
  strip -o "$runtime" "$bin/gatehouse-appimage-runtime"
fi
# The type-2 magic bytes 'AI\x02' at offset 8 (ELF header padding; after strip, which
# would reset them): what file managers and AppImage tools recognise.
printf 'AI\002' | dd of="$runtime" bs=1 seek=8 count=3 conv=notrunc status=none

appdir=$stage/AppDir
dpkg-deb -x "$deb" "$appdir"
rm -rf "$appdir/usr/share/doc" "$appdir/usr/share/lintian"   # the copyright travels as usr/share/licenses below
mkdir -p "$appdir/usr/share/licenses/gatehouse"
cp packaging/deb/copyright "$appdir/usr/share/licenses/gatehouse/copyright"
install -m 0755 packaging/appimage/AppRun "$appdir/AppRun"
cp "$appdir/usr/share/applications/Gatehouse.desktop" "$appdir/gatehouse.desktop"
cp icons/256x256.png "$appdir/gatehouse-desktop.png"
ln -s gatehouse-desktop.png "$appdir/.DirIcon"
appimage="$out/Gatehouse-${version}-x86_64.AppImage"
mksquashfs "$appdir" "$stage/AppImage.sqfs" -comp zstd -root-owned -noappend -quiet >/dev/null
cat "$runtime" "$stage/AppImage.sqfs" > "$appimage"
chmod 0755 "$appimage"
rm -rf "$appdir" "$stage/AppImage.sqfs"

say "built:"
ls -l "$deb" "$appimage"
