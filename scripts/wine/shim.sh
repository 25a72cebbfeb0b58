#!/usr/bin/env bash
# Installs the ProcessPrng shim (bcryptprimitives.c beside this script) into the Wine prefix
# $WINEPREFIX, unless this Wine has its own bcryptprimitives.dll or the prefix holds a current
# build of the shim. Used by scripts/wine-test.sh and scripts/package-windows-test.sh; the
# caller sets WINEDLLOVERRIDES=bcryptprimitives=n so Wine loads it. Test prefixes only, never
# shipped (docs/decisions.md, "The Windows build under Wine").
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${WINEPREFIX:?WINEPREFIX must name the prefix}"
shim="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
if ls /usr/lib/x86_64-linux-gnu/wine/x86_64-windows/bcryptprimitives.dll >/dev/null 2>&1; then
  exit 0
fi
if [ ! -f "$shim" ] || [ "$here/bcryptprimitives.c" -nt "$shim" ]; then
  x86_64-w64-mingw32-gcc -shared -O2 -Wall -o "$shim" \
    "$here/bcryptprimitives.c" "$here/bcryptprimitives.def" -ladvapi32
fi
