#!/usr/bin/env bash
# Renders rcconform's HTML report in headless Chromium and checks that the
# page draws: the screenshot exists, is more than a few KB, and is not one
# flat colour.
#
#   ci/render-report.sh [--fail] [OUT.png] [RESULT.json]
#
# With --fail the result must be a failing run's: the page must say FAIL,
# group its violations (a <details> per kind, the first of each clause
# open with a drawn instance), and the screenshot, taken taller, must show
# the failure's red (the FAIL badges and the violating packet's arrow).
#
# OUT.png defaults to /tmp/rcconform-report.png. Without RESULT.json the
# page is the reports package's demo (an audit of two captures with every
# verdict and two failing findings); ci/testdata/audit-result.json is a
# result to try it with. Chromium is installed from Debian when missing
# (as root); only when that is impossible does the script print "skipped"
# and exit 0. It never touches the network otherwise: the page is a local
# file that loads nothing.
set -euo pipefail

expect_fail=false
if [[ ${1:-} == --fail ]]; then
	expect_fail=true
	shift
fi
out="${1:-/tmp/rcconform-report.png}"
json="${2:-}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
min_bytes=8192

say() { echo "render-report: $*"; }
skip() {
	say "skipped: $*"
	exit 0
}
fail() {
	say "FAIL: $*" >&2
	exit 1
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 1. Chromium.
chrome="$(command -v chromium || command -v chromium-browser || true)"
if [[ -z $chrome ]]; then
	[[ $(id -u) -eq 0 ]] || skip "chromium is not installed, and installing it needs root"
	command -v apt-get >/dev/null || skip "chromium is not installed, and there is no apt-get to install it"
	say "installing chromium from Debian"
	if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >"$work/apt.log" 2>&1; then
		tail -n 20 "$work/apt.log" >&2
		skip "chromium could not be installed"
	fi
	chrome="$(command -v chromium || true)"
	[[ -n $chrome ]] || skip "chromium installed but not on PATH"
fi
say "using $("$chrome" --version 2>/dev/null || echo "$chrome")"

# 2. The page.
html="$work/report.html"
args=(-demo-html="$html")
if [[ -n $json ]]; then
	[[ -f $json ]] || fail "no result file $json"
	args+=(-demo-json="$(cd "$(dirname "$json")" && pwd)/$(basename "$json")")
fi
(cd "$root" && go test ./reports -run '^TestWriteDemoHTML$' -count=1 -args "${args[@]}") >"$work/go-test.log" 2>&1 ||
	{
		cat "$work/go-test.log" >&2
		fail "writing the HTML report"
	}
[[ -s $html ]] || fail "the HTML report was not written"
height=2000
if $expect_fail; then
	height=6000
	grep -q 'class="status bad"' "$html" || fail "the page of a failing run does not say FAIL"
	grep -q '<details class="group" id="clause-1-kind-1" open>' "$html" || fail "the first kind of the first failed clause is not an open <details>"
	grep -q '<h4>Instance 1 of ' "$html" || fail "no instance is drawn"
	grep -q '<svg ' "$html" || fail "no sequence diagram"
fi

# 3. The screenshot.
mkdir -p "$(dirname "$out")"
rm -f "$out"
if ! timeout 180 "$chrome" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
	--user-data-dir="$work/profile" --screenshot="$out" --window-size=1280,"$height" \
	"file://$html" >"$work/chromium.log" 2>&1; then
	[[ -s $out ]] || {
		tail -n 30 "$work/chromium.log" >&2
		fail "chromium did not take the screenshot"
	}
fi

# 4. Checks.
[[ -f $out ]] || {
	tail -n 30 "$work/chromium.log" >&2
	fail "no screenshot at $out"
}
size="$(stat -c %s "$out")"
((size > min_bytes)) || fail "screenshot $out is $size bytes, not more than $min_bytes: the page did not draw"
if command -v python3 >/dev/null; then
	python3 - "$out" "$expect_fail" <<'PY' || fail "screenshot $out is blank, or lacks the red of a failure"
# A PNG reader in the standard library only: is the image more than one flat colour?
import struct, sys, zlib

path = sys.argv[1]
want_red = sys.argv[2] == "true"
data = open(path, "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("not a PNG")
pos, idat, ihdr = 8, [], None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat.append(body)
    pos += 12 + n
width, height, depth, ctype, _, _, interlace = ihdr
channels = {2: 3, 6: 4}.get(ctype)
if depth != 8 or channels is None or interlace:
    print(f"render-report: {width}x{height} PNG (colour type {ctype}, depth {depth}): flat-colour check not done")
    sys.exit(0)
raw = zlib.decompress(b"".join(idat))
stride = width * channels
prev = bytearray(stride)
colours = set()
red = 0
for y in range(height):
    f = raw[y * (stride + 1)]
    row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = row[i - channels] if i >= channels else 0
        b = prev[i]
        if f == 1:
            row[i] = (row[i] + a) & 0xFF
        elif f == 2:
            row[i] = (row[i] + b) & 0xFF
        elif f == 3:
            row[i] = (row[i] + ((a + b) >> 1)) & 0xFF
        elif f == 4:
            c = prev[i - channels] if i >= channels else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
    for i in range(0, stride, channels):
        colours.add(bytes(row[i:i + channels]))
        if want_red:
            r, g, b = row[i], row[i + 1], row[i + 2]
            if r >= 0x90 and r - max(g, b) >= 0x70:
                red += 1
    if len(colours) >= 16 and (not want_red or red >= 400):
        print(f"render-report: {width}x{height} PNG with at least {len(colours)} colours" + (f" and {red} red pixels" if want_red else ""))
        sys.exit(0)
    prev = row
if want_red and len(colours) >= 16:
    sys.exit(f"{width}x{height} PNG shows only {red} red pixels: no failure drawn")
sys.exit(f"{width}x{height} PNG has only {len(colours)} colour(s)")
PY
else
	say "python3 not found: flat-colour check not done"
fi
say "ok: $out ($size bytes)"
