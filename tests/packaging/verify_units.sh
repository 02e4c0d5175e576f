#!/bin/bash
# systemd-analyze verify on the packaged units, configured as CMake installs
# them but with the binaries pointed at stand-ins (the real ones need not be
# installed here). Exit 77 (skip) without systemd-analyze.
set -euo pipefail
analyze=$1 src=$2 work=$3
if [[ -z "$analyze" || ! -x "$analyze" ]]; then
  echo "SKIP: systemd-analyze is not installed"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work/bin" "$work/units"
for b in rgpud rgpu-pool; do ln -s /bin/true "$work/bin/$b"; done
for u in rgpud rgpu-pool; do
  sed -e "s|@RGPU_BINDIR@|$work/bin|g" -e "s|@RGPU_CONF_DIR@|/etc/rgpu|g" "$src/systemd/$u.service.in" \
    > "$work/units/$u.service"
  if grep -n '@[A-Z_]*@' "$work/units/$u.service"; then
    echo "FAIL: $u.service has an unsubstituted variable"
    exit 1
  fi
done
# verify prints problems on stderr and fails on errors; warnings about the
# host (no D-Bus in a container) are not the units' problems.
out=$(timeout 30 "$analyze" verify --man=no "$work/units/rgpud.service" "$work/units/rgpu-pool.service" 2>&1) || {
  echo "$out"
  echo "FAIL: systemd-analyze verify"
  exit 1
}
if echo "$out" | grep -E "rgpud\.service|rgpu-pool\.service" | grep -vi "dbus\|bus"; then
  echo "FAIL: systemd-analyze found problems in the units"
  exit 1
fi
echo "$out"
echo "ok: units verified"
