#!/usr/bin/env bash
# Tests the Windows installer scripts/package-windows.sh built: lists its tables and files
# with msitools and checks them (both programs as built, the Start-menu shortcut, the PATH
# entry, the uninstall entry's fields), then installs it under Wine (`msiexec /i /qn` in a
# fresh prefix), checks the files, shortcut, PATH and uninstall entry on the "machine", runs
# the installed CLI found through PATH (`gatehouse --version`, `site init`, `keys mint`,
# `whoami`), uninstalls it (`msiexec /x /qn`) and checks that everything it added is gone,
# the user's own PATH entries stayed and the site the CLI made is untouched.
# The desktop app itself is not started: it needs WebView2, which Wine does not provide
# (docs/decisions.md, "The Windows installer").
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/package
say() { printf '==> [package-windows-test %dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
fail() {
  echo "package-windows-test: FAIL: $*" >&2
  [ ! -s "${work:-/nonexistent}/cli.err" ] || { echo "the CLI's stderr:" >&2; tail -n 20 "$work/cli.err" >&2; }
  exit 1
}
passed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }

need=()
for p in msitools wine64 file; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
wine=$(command -v wine64 || echo /usr/lib/wine/wine64)
wineserver=$(command -v wineserver || echo /usr/lib/wine/wineserver)

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "${GATEHOUSE_GIT_COMMIT:-unknown}")
msi=$(readlink -f "$out/Gatehouse-${version}-x86_64.msi")
stage=$out/windows
[ -f "$msi" ] || fail "no $msi: run scripts/package-windows.sh first"
work=$(mktemp -d /tmp/gatehouse-msi-test.XXXXXX)
export WINEPREFIX="$work/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=;bcryptprimitives=n"
cleanup() {
  "$wineserver" -k 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# ---- contents, from the MSI's own tables ---------------------------------------------
# A table's rows (msiinfo export, without its three header lines).
rows() { msiinfo export "$msi" "$1" | tail -n +4 | tr -d '\r'; }
say "msiinfo: tables and files"
files=$(rows File | cut -f3 | sort | tr '\n' ' ')
[ "$files" = "LICENSE.txt gatehouse-desktop.exe gatehouse.exe " ] || fail "the File table lists: $files"
msiextract -C "$work/extract" "$msi" >/dev/null
for exe in gatehouse-desktop.exe gatehouse.exe; do
  got=$(find "$work/extract" -name "$exe")
  [ -n "$got" ] || fail "msiextract found no $exe"
  cmp -s "$got" "$stage/$exe" || fail "$exe in the MSI differs from the build"
  file "$got" | grep -q 'PE32+ executable.*x86-64' || fail "$exe is not a 64-bit Windows program: $(file "$got")"
done
ok "File table: $files; both programs are the x86-64 builds"

shortcut=$(rows Shortcut)
[ "$(cut -f2,3,5 <<<"$shortcut")" = $'ProgramMenuFolder\tGatehouse\t[INSTALLDIR]gatehouse-desktop.exe' ] ||
  fail "Shortcut table: $shortcut"
ok "Start-menu shortcut 'Gatehouse' starts gatehouse-desktop.exe"

environment=$(rows Environment)
[ "$(cut -f2,3 <<<"$environment")" = $'=-PATH\t[~];[INSTALLDIR]' ] || fail "Environment table: $environment"
sequence=$(rows InstallExecuteSequence | cut -f1)
for action in WriteEnvironmentStrings RemoveEnvironmentStrings InstallFiles CreateShortcuts RegisterProduct; do
  grep -qx "$action" <<<"$sequence" || fail "InstallExecuteSequence lacks $action"
done
ok "PATH: appended on install, removed on uninstall (Environment table and its actions)"

property() { rows Property | awk -F'\t' -v k="$1" '$1 == k {print $2}'; }
[ "$(property ProductName)" = Gatehouse ] || fail "ProductName: $(property ProductName)"
[ "$(property ProductVersion)" = "$version" ] || fail "ProductVersion: $(property ProductVersion)"
[ "$(property Manufacturer)" = "Gatehouse maintainers" ] || fail "Manufacturer"
[ "$(property ARPPRODUCTICON)" = gatehouse.ico ] || fail "ARPPRODUCTICON"
product_code=$(property ProductCode)
ok "uninstall entry fields: Gatehouse $version by Gatehouse maintainers, product $product_code"

# ---- install, use and uninstall under Wine ---------------------------------------------
say "wineboot (fresh prefix)"
"$wine" wineboot -i >/dev/null 2>&1
# Wine 8.0 lacks what Rust's std imports for random bytes; the test prefix gets the shim
# (never the MSI: Windows has the real DLL).
bash scripts/wine/shim.sh
reg_value() { "$wine" reg query "$1" /v "$2" 2>/dev/null | tr -d '\r' | awk -v v="$2" '$1 == v {$1=""; $2=""; sub(/^  /, ""); print}'; }
# The user's own PATH entries, which install and uninstall must keep.
"$wine" reg add 'HKCU\Environment' /v PATH /t REG_EXPAND_SZ /d 'C:\tools;%USERPROFILE%\bin' /f >/dev/null

say "msiexec /i $msi /qn"
"$wine" msiexec /i "$("$wine" winepath -w "$msi" 2>/dev/null | tr -d '\r')" /qn || fail "msiexec /i exited $?"
# Without `|| true` a prefix that has no users folder ended the script here, saying nothing.
appdata=$(find "$WINEPREFIX/drive_c/users" -maxdepth 2 -name AppData -type d 2>/dev/null | head -1 || true)
[ -n "$appdata" ] || fail "no AppData folder under $WINEPREFIX/drive_c/users after msiexec /i"
installed="$appdata/Local/Programs/Gatehouse"
for exe in gatehouse-desktop.exe gatehouse.exe; do
  cmp -s "$installed/$exe" "$stage/$exe" || fail "$installed/$exe is missing or differs"
done
lnk="$appdata/Roaming/Microsoft/Windows/Start Menu/Programs/Gatehouse.lnk"
[ -f "$lnk" ] || fail "no Start-menu shortcut at $lnk"
path=$(reg_value 'HKCU\Environment' PATH)
case "$path" in
  'C:\tools;%USERPROFILE%\bin;'*'\AppData\Local\Programs\Gatehouse'*) ;;
  *) fail "the user's PATH after install: $path" ;;
esac
uninstall_key=
for root in HKCU HKLM; do
  key="$root\\Software\\Microsoft\\Windows\\CurrentVersion\\Uninstall\\$product_code"
  if [ "$(reg_value "$key" DisplayName)" = Gatehouse ]; then uninstall_key=$key; fi
done
[ -n "$uninstall_key" ] || fail "no uninstall entry named Gatehouse for $product_code"
[ "$(reg_value "$uninstall_key" DisplayVersion)" = "$version" ] || fail "DisplayVersion: $(reg_value "$uninstall_key" DisplayVersion)"
ok "installed: both programs, $lnk, PATH = $path, uninstall entry $uninstall_key"

say "gatehouse --version, found through PATH"
# A new Wine session reads the user's environment from the registry, as a new terminal does.
"$wineserver" -k 2>/dev/null || true
got=$("$wine" cmd /c gatehouse --version 2>/dev/null | tr -d '\r')
[ "$got" = "gatehouse $version ($commit)" ] || fail "'cmd /c gatehouse --version' says '$got'"
ok "cmd /c gatehouse --version: $got"

say "site init, keys mint, whoami with the installed gatehouse.exe, found through PATH"
site_unix="$work/site"
site=$("$wine" winepath -w "$site_unix" 2>/dev/null | tr -d '\r')
gh() { "$wine" cmd /c gatehouse "$@" 2>>"$work/cli.err" | tr -d '\r'; }
gh site init "$site" >/dev/null
[ -f "$site_unix/gatehouse.toml" ] || fail "the installed gatehouse.exe's site init wrote no $site_unix/gatehouse.toml"
minted=$(gh --site "$site" keys mint --label installed --roles viewer --json)
key=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["key"])' "$minted") ||
  fail "keys mint printed: $minted"
who=$(GATEHOUSE_API_KEY="$key" WINEDEBUG=-all gh --site "$site" whoami --json)
python3 -c 'import json,sys; sys.exit(json.loads(sys.argv[1])["roles"] != ["viewer"])' "$who" ||
  fail "whoami said: $who"
ok "installed gatehouse.exe: site init made $site, keys mint, whoami: $who"

say "msiexec /x /qn"
"$wine" msiexec /x "$product_code" /qn || fail "msiexec /x exited $?"
[ ! -e "$installed" ] || fail "uninstall left $(ls -A "$installed")"
[ ! -e "$lnk" ] || fail "uninstall left the shortcut"
path=$(reg_value 'HKCU\Environment' PATH)
case "$path" in
  *Gatehouse*) fail "uninstall left Gatehouse in PATH: $path" ;;
  'C:\tools;%USERPROFILE%\bin' | 'C:\tools;%USERPROFILE%\bin;') ;;
  *) fail "uninstall changed the user's own PATH entries: $path" ;;
esac
[ -z "$(reg_value "$uninstall_key" DisplayName)" ] || fail "the uninstall entry is still there"
"$wine" reg query 'HKCU\Software\Gatehouse' >/dev/null 2>&1 && fail "HKCU\\Software\\Gatehouse is still there"
[ -f "$site_unix/gatehouse.toml" ] || fail "uninstall removed the user's site"
ok "uninstalled: no files, no shortcut, no uninstall entry; PATH back to $path"

echo "package-windows-test: $passed passed, 0 failed"
