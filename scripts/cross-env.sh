# Sourced by scripts that build for the other systems (scripts/cross-check.sh):
# the C toolchain of each cross target. Windows: Debian's mingw-w64 (cc-rs finds
# x86_64-w64-mingw32-gcc itself). macOS: zig (scripts/zig-cc, set up by
# scripts/cross-setup.sh), for the build scripts that compile C (ring, SQLite).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for t in aarch64_apple_darwin x86_64_apple_darwin; do
  export "CC_$t=$here/zig-cc" "AR_$t=$here/zig-ar"
done
unset here t
