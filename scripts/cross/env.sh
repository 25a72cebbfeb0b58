# Sourced before a cargo build, check or clippy for a macOS target on Linux: C build
# scripts (objc2-exception-helper, ring) compile with zig through scripts/cross/zig-cc and
# zig-ar (set up by scripts/cross/setup.sh). On a Mac none of this is needed: cc-rs finds
# Apple's clang itself.
cross_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for t in aarch64_apple_darwin x86_64_apple_darwin; do
  export "CC_$t=$cross_dir/zig-cc" "AR_$t=$cross_dir/zig-ar"
done
unset cross_dir t
