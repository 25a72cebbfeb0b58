#!/usr/bin/env bash
# Tests the packages scripts/package.sh built, as a site admin would meet them, on this
# (Debian 12, root) machine: checks the .deb's metadata, files and lintian verdict,
# installs it with apt, drives the installed CLI and desktop app, removes and purges it
# and looks for anything left behind; then runs the AppImage. Artifacts (screenshots,
# lintian output) go to target/package/. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
out=target/package
say() { printf '==> [package-test %dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
fail() { echo "package-test: FAIL: $*" >&2; exit 1; }
passed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }

need=()
for p in lintian desktop-file-utils imagemagick x11-utils xvfb xauth dpkg-dev python3; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "${GATEHOUSE_GIT_COMMIT:-unknown}")
want_version="gatehouse $version ($commit)"
deb=$(readlink -f "$out/gatehouse_${version}_amd64.deb")
appimage=$(readlink -f "$out/Gatehouse-${version}-x86_64.AppImage")
[ -f "$deb" ] || fail "no $deb: run scripts/package.sh first"
[ -f "$appimage" ] || fail "no $appimage: run scripts/package.sh first"
work=$(mktemp -d /tmp/gatehouse-package-test.XXXXXX)
cleanup() {
  [ -n "${app_pid:-}" ] && kill "$app_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# ---- metadata ---------------------------------------------------------------------
say "dpkg-deb --info"
info=$(dpkg-deb --info "$deb")
field() { dpkg-deb --field "$deb" "$1"; }
[ "$(field Package)" = gatehouse ] || fail "Package is $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version is $(field Version), not $version"
[ "$(field Architecture)" = amd64 ] || fail "Architecture is $(field Architecture)"
# (Matched from variables: under pipefail, `cmd | grep -q` fails when grep stops reading early.)
maintainer=$(field Maintainer)
grep -Eq '^[^<]+ <[^@>]+@[^>]+>$' <<<"$maintainer" || fail "Maintainer has no address: $maintainer"
description=$(field Description)
grep -q "MCP access" <<<"$description" || fail "Description: $description"
depends=$(field Depends)
# Every library the two binaries link must come from a declared dependency:
# dpkg-shlibdeps names the packages, and each must appear in Depends.
mkdir -p "$work/shlib/debian" "$work/x"
dpkg-deb -x "$deb" "$work/x"
printf 'Source: gatehouse\n\nPackage: gatehouse\nArchitecture: any\n' > "$work/shlib/debian/control"
shlibs=$(cd "$work/shlib" && dpkg-shlibdeps -O "$work/x/usr/bin/gatehouse-desktop" "$work/x/usr/bin/gatehouse" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || fail "dpkg-shlibdeps found nothing"
for dep in $(echo "$shlibs" | tr ',' '\n' | sed 's/(.*//; s/ //g'); do
  tr ',' '\n' <<<"$depends" | sed 's/(.*//; s/ //g' | grep -x "$dep" >/dev/null ||
    fail "the binaries link $dep (dpkg-shlibdeps: $shlibs) but Depends is: $depends"
done
for dep in libwebkit2gtk-4.1-0 libgtk-3-0; do
  grep -q "$dep" <<<"$depends" || fail "Depends lacks $dep: $depends"
done
ok "control fields; Depends ($depends) covers dpkg-shlibdeps ($shlibs)"

say "dpkg-deb --contents"
# Files (not directories) as ./path (the bundler's tar names them without the leading ./).
contents=$(dpkg-deb --contents "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\(\./\)\{0,1\}|./|')
expected=(
  ./usr/bin/gatehouse ./usr/bin/gatehouse-desktop
  ./usr/share/applications/Gatehouse.desktop
  ./usr/share/doc/gatehouse/copyright ./usr/share/doc/gatehouse/changelog.gz
  ./usr/share/lintian/overrides/gatehouse
  ./usr/share/icons/hicolor/scalable/apps/gatehouse-desktop.svg
)
for size in 16x16 24x24 32x32 48x48 64x64 128x128 256x256 256x256@2 512x512; do
  expected+=("./usr/share/icons/hicolor/$size/apps/gatehouse-desktop.png")
done
for f in "${expected[@]}"; do
  grep -qx -- "$f" <<<"$contents" || fail "the .deb lacks $f"
done
unexpected=$(echo "$contents" | grep -vx -e '\./usr/bin/gatehouse' -e '\./usr/bin/gatehouse-desktop' -e '\./usr/share/.*' || true)
[ -z "$unexpected" ] || fail "unexpected files in the .deb: $unexpected"
# No path from the build machine may leak into what configs or the app read.
# (CARGO_TARGET_DIR may put the build tree outside this checkout.)
target_dir=$(readlink -f "${CARGO_TARGET_DIR:-target}")
for tree in "$PWD/target" "$target_dir"; do
  if strings "$work/x/usr/bin/gatehouse-desktop" "$work/x/usr/bin/gatehouse" | grep -F -- "$tree" >/dev/null; then
    fail "a binary embeds the build tree path $tree"
  fi
done
desktop-file-validate "$work/x/usr/share/applications/Gatehouse.desktop" || fail "desktop-file-validate"
grep -qx 'Exec=gatehouse-desktop' "$work/x/usr/share/applications/Gatehouse.desktop" || fail ".desktop Exec"
ok "${#expected[@]} expected files, nothing else; the .desktop entry validates"

say "lintian"
lintian --tag-display-limit 0 "$deb" > "$out/lintian.txt" 2>&1 || true
cat "$out/lintian.txt"
if grep -q '^E: ' "$out/lintian.txt"; then fail "lintian reported errors (see above)"; fi
ok "lintian: no errors, $(grep -c '^W: ' "$out/lintian.txt" || true) warnings"

# ---- install and use ----------------------------------------------------------------
# A snapshot of every file named like gatehouse outside the places a run may write to
# (this checkout, the build dirs, temp dirs): after purge it must be the same.
scan() {
  find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
    -o -path "$PWD" -o -path /work -o -path "${CARGO_TARGET_DIR:-$PWD/target}" \) -prune \
    -o \( -iname '*gatehouse*' -print \) 2>/dev/null | sort
}
if dpkg-query -W -f='${Status}' gatehouse 2>/dev/null | grep -q "ok installed"; then
  apt-get purge -y -qq gatehouse >/dev/null
fi
scan > "$work/before.txt"

say "apt-get install $deb"
apt-get install -y -qq "$deb" >/dev/null
[ "$(command -v gatehouse)" = /usr/bin/gatehouse ] || fail "gatehouse on PATH is $(command -v gatehouse)"
got=$(/usr/bin/gatehouse --version)
[ "$got" = "$want_version" ] || fail "/usr/bin/gatehouse --version says '$got', want '$want_version'"
ok "installed; /usr/bin/gatehouse --version: $got"

say "site init, keys mint, an MCP session through /usr/bin/gatehouse"
site="$work/site"
home="$work/home"
mkdir -p "$home"
/usr/bin/gatehouse site init "$site" --scratch >/dev/null
key=$(/usr/bin/gatehouse --site "$site" keys mint --label "package test" --roles editor --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
# The command a generated client config names (Cursor's JSON), from the CLI given as "$@".
config_command() {
  "$@" --site "$site" config --client cursor --public 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["mcpServers"]["gatehouse"]["command"])'
}
got=$(config_command /usr/bin/gatehouse) || fail "gatehouse config --client cursor"
[ "$got" = /usr/bin/gatehouse ] || fail "the generated config names $got, not /usr/bin/gatehouse"
ok "a generated client config names /usr/bin/gatehouse"
GATEHOUSE_API_KEY="$key" python3 - "$site" <<'EOF' || fail "MCP initialize through /usr/bin/gatehouse"
import json, subprocess, sys
proc = subprocess.Popen(["/usr/bin/gatehouse", "--site", sys.argv[1], "mcp"],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "package-test", "version": "1"}}}
proc.stdin.write(json.dumps(request) + "\n")
proc.stdin.flush()
reply = json.loads(proc.stdout.readline())
proc.stdin.close()
code = proc.wait(timeout=60)
info = reply["result"]["serverInfo"]
assert reply["id"] == 1 and info["name"], reply
print(f"ok: initialize answered by {info['name']} {info.get('version')}; exit {code}")
assert code == 0, code
EOF
passed=$((passed + 1))

# Starts a desktop binary ($APP) under Xvfb with a private HOME ($HOME_DIR), waits for
# its window and a painted page, and saves a screenshot ($SHOT). $1 names it in errors.
# WAIT_FILE, when set, must exist too before the app is stopped: the page asks for
# it (the AppImage's CLI copy) after its first paint, so a paint alone is too early.
show_window() {
  export APP SHOT WAIT_FILE="${WAIT_FILE:-}"
  xvfb-run -a -s "-screen 0 1280x800x24" bash -c '
    set -u
    # Its own process group, so the app, its WebKit helpers and (for the AppImage) the
    # runtime that waits on it all stop together; TMPDIR keeps an extraction in $work.
    setsid env HOME="$HOME_DIR" XDG_DATA_HOME= XDG_CONFIG_HOME= XDG_CACHE_HOME= \
      GATEHOUSE_SITE="$SITE" TMPDIR="$TMP_DIR" $APP >"$LOG" 2>&1 &
    pid=$!
    # SIGTERM runs the exit steps of the app (serve stopped, the audit checkpoint
    # signed: seconds at most); an app still there after 20 s is killed and
    # fails the step, where waiting for it had stalled the whole run.
    stop() {
      kill -TERM -- "-$pid" 2>/dev/null
      for _ in $(seq 1 40); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
        sleep 0.5
      done
      echo "the app did not exit within 20 s of SIGTERM"
      kill -KILL -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null; return 1
    }
    for _ in $(seq 1 240); do
      kill -0 "$pid" 2>/dev/null || { echo "the app exited early"; exit 1; }
      if xwininfo -root -tree | grep -q "\"Gatehouse\""; then
        import -window root "$SHOT" 2>/dev/null
        # Painted: the page has drawn more than a blank window (dozens of colours).
        colours=$(identify -format "%k" "$SHOT" 2>/dev/null || echo 0)
        if [ "$colours" -gt 50 ] && { [ -z "$WAIT_FILE" ] || [ -x "$WAIT_FILE" ]; }; then
          stop; exit
        fi
      fi
      sleep 0.5
    done
    echo "no painted Gatehouse window${WAIT_FILE:+ with $WAIT_FILE in place}"; stop; exit 1
  ' || { cat "$work/app.log" >&2; fail "$1 did not show its window or did not exit on SIGTERM (see above)"; }
}
mkdir -p "$work/tmp"
export HOME_DIR="$home" SITE="$site" LOG="$work/app.log" TMP_DIR="$work/tmp"

say "the installed desktop app under Xvfb"
APP=/usr/bin/gatehouse-desktop SHOT="$out/installed-desktop.png"
show_window /usr/bin/gatehouse-desktop
ok "/usr/bin/gatehouse-desktop showed its window: $out/installed-desktop.png"

say "apt-get remove"
dpkg -L gatehouse | sort | while read -r f; do [ -d "$f" ] || echo "$f"; done > "$work/package-files.txt"
apt-get remove -y -qq gatehouse >/dev/null
while read -r f; do
  [ ! -e "$f" ] || fail "apt-get remove left $f"
done < "$work/package-files.txt"
# No conffiles and no maintainer scripts: remove leaves nothing for purge (no "rc" state).
dpkg-query -W gatehouse >/dev/null 2>&1 && fail "dpkg still knows gatehouse after remove"
scan > "$work/after.txt"
diff "$work/before.txt" "$work/after.txt" || fail "files named gatehouse appeared outside the sites (diff above)"
[ -f "$site/gatehouse.toml" ] || fail "removal touched the user's site"
ok "apt-get remove left none of its $(wc -l < "$work/package-files.txt") files and no other gatehouse file; the site is intact"

say "apt-get install again, then apt-get purge"
apt-get install -y -qq "$deb" >/dev/null
apt-get purge -y -qq gatehouse >/dev/null
dpkg-query -W gatehouse >/dev/null 2>&1 && fail "dpkg still knows gatehouse after purge"
scan > "$work/after.txt"
diff "$work/before.txt" "$work/after.txt" || fail "files named gatehouse appeared after purge (diff above)"
[ -f "$site/gatehouse.toml" ] || fail "purge touched the user's site"
ok "apt-get purge left no gatehouse file; the site is intact"

# ---- AppImage -----------------------------------------------------------------------
say "AppImage"
# Its CLI and its app run from a stable per-user copy of the CLI, which configs name.
home="$work/home-appimage-cli"
mkdir -p "$home"
stable="$home/.local/share/gatehouse/bin/gatehouse"
got=$(HOME="$home" TMPDIR="$work/tmp" APPIMAGE_EXTRACT_AND_RUN=1 "$appimage" gatehouse --version)
[ "$got" = "$want_version" ] || fail "AppImage gatehouse --version says '$got', want '$want_version'"
got=$(HOME="$home" TMPDIR="$work/tmp" "$appimage" --appimage-extract-and-run gatehouse --version)
[ "$got" = "$want_version" ] || fail "--appimage-extract-and-run: '$got'"
ok "AppImage gatehouse --version (extract-and-run): $got"
[ -x "$stable" ] || fail "the AppImage's CLI did not keep its copy at $stable"
got=$(config_command env HOME="$home" TMPDIR="$work/tmp" APPIMAGE_EXTRACT_AND_RUN=1 "$appimage" gatehouse) ||
  fail "AppImage gatehouse config --client cursor"
[ "$got" = "$stable" ] || fail "the AppImage's generated config names $got, not $stable"
ok "a config generated by the AppImage's CLI names its stable copy $stable"
[ -z "$(ls -A "$work/tmp")" ] || fail "extract-and-run left $(ls "$work/tmp") behind"
home="$work/home-appimage"
mkdir -p "$home"
export HOME_DIR="$home"
stable="$home/.local/share/gatehouse/bin/gatehouse"
APP="env APPIMAGE_EXTRACT_AND_RUN=1 $appimage" SHOT="$out/appimage-desktop.png" WAIT_FILE="$stable"
show_window "the AppImage's desktop app"
[ -x "$stable" ] || fail "the AppImage app did not install its CLI at $stable"
got=$("$stable" --version)
[ "$got" = "$want_version" ] || fail "$stable --version says '$got'"
ok "the AppImage's desktop app showed its window and keeps its CLI at ~/.local/share/gatehouse/bin/gatehouse"

echo "package-test: $passed passed, 0 failed"
