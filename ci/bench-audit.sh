#!/usr/bin/env bash
# Measures the capture audit against two yardsticks, on a synthetic
# capture of conformant RoCEv2 RC traffic (8 QPs interleaved, SEND, WRITE,
# READ and both ATOMICs with their ACKs, READ responses and ATOMIC
# acknowledgments, valid ICRCs), written by `rcconform gen-bench-capture`:
#
#   (a) the bare read rate: every frame read with gopacket's pure-Go pcapgo
#       reader and nothing else (cmd/rcconform/internal/benchread);
#   (b) `rcconform audit --format json`: frames/s and peak RSS, on the big
#       capture and on a small one, to show that memory does not grow with
#       the capture's length;
#   (c) `tshark -Y infiniband -T fields -e infiniband.bth.psn`, the usual
#       way to pull PSNs out of a RoCE capture.
#
#   ci/bench-audit.sh [FRAMES]        (default 1000000; at least 1000000 for the figures that count)
#
# Targets: audit >= half the bare read rate, audit >= 20x tshark. A miss is
# reported; with STRICT=1 it also fails the script. GNU time and tshark
# are installed from Debian when missing (as root); without tshark, (c) is
# skipped. Everything happens in a temporary directory (KEEP=1 keeps it).
set -euo pipefail

frames="${1:-1000000}"
small=10000
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
if [[ ${KEEP:-0} == 1 ]]; then
	echo "bench-audit: keeping $work"
else
	trap 'rm -rf "$work"' EXIT
fi

say() { echo "bench-audit: $*"; }
die() {
	echo "bench-audit: FAIL: $*" >&2
	exit 1
}

apt_install() { # package...
	[[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null || return 1
	say "installing $* from Debian"
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"; } >"$work/apt.log" 2>&1 ||
		{
			tail -n 20 "$work/apt.log" >&2
			return 1
		}
}

# rate FRAMES SECONDS -> frames/s
rate() { awk -v n="$1" -v s="$2" 'BEGIN { if (s <= 0) s = 0.000001; printf "%.0f", n / s }'; }

# elapsed_s FILE: wall-clock seconds from GNU time -v output
elapsed_s() {
	awk -F': ' '/Elapsed \(wall clock\)/ {
		n = split($2, p, ":"); s = 0
		for (i = 1; i <= n; i++) s = s * 60 + p[i]
		print s }' "$1"
}
rss_kb() { awk -F': ' '/Maximum resident set size/ { print $2 }' "$1"; }

# 0. Tools.
[[ -x /usr/bin/time ]] || apt_install time || die "GNU time (/usr/bin/time) is needed"
tshark_bin="$(command -v tshark || true)"
if [[ -z $tshark_bin ]]; then
	apt_install tshark && tshark_bin="$(command -v tshark || true)"
	[[ -n $tshark_bin ]] || say "tshark unavailable: (c) skipped"
fi
say "building rcconform and benchread"
(cd "$root" && go build -o "$work/rcconform" ./cmd/rcconform && go build -o "$work/benchread" ./cmd/rcconform/internal/benchread)

# 1. Captures.
big="$work/bench-$frames.pcap"
tiny="$work/bench-$small.pcap"
"$work/rcconform" gen-bench-capture --frames "$frames" --out "$big"
"$work/rcconform" gen-bench-capture --frames "$small" --out "$tiny"
say "capture: $(du -h "$big" | cut -f1) for $frames frames"
cat "$big" >/dev/null # into the page cache, for every reader alike

# 2. (a) Bare read.
"$work/benchread" -runs 3 "$big" | tee "$work/bare.txt"
bare="$(awk '/^pcapgo:/ { print $(NF-1) }' "$work/bare.txt")"

# 3. (b) Audit: best of three runs on the big capture, one on the small one.
audit_run() { # capture out.json time.txt
	local status=0
	/usr/bin/time -v "$work/rcconform" audit --format json "$1" >"$2" 2>"$3" || status=$?
	case $status in
	0) ;;
	1) say "WARNING: the audit found violations in conformant synthetic traffic (false positives); see $2" ;;
	*)
		cat "$3" >&2
		die "rcconform audit exited $status on $1"
		;;
	esac
}
best=""
best_rss=0
for i in 1 2 3; do
	audit_run "$big" "$work/audit.json" "$work/time-$i.txt"
	s="$(elapsed_s "$work/time-$i.txt")"
	r="$(rss_kb "$work/time-$i.txt")"
	((r > best_rss)) && best_rss=$r
	if [[ -z $best ]] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$s; fi
	# Slow runs are not repeated: their noise is small beside them.
	awk -v s="$s" 'BEGIN { exit !(s > 10) }' && break
done
audit="$(rate "$frames" "$best")"
audit_run "$tiny" "$work/audit-small.json" "$work/time-small.txt"
small_rss="$(rss_kb "$work/time-small.txt")"
roce="$(grep -m1 '"roce_frames"' "$work/audit.json" | tr -dc 0-9)"
[[ $roce == "$frames" ]] || die "the audit saw $roce RoCE frames of $frames"
say "audit: $frames frames in ${best}s: $audit frames/s, peak RSS ${best_rss} KB (${small} frames: ${small_rss} KB)"
# The same with one monitor (C9-95): the cost of reading, decoding, ICRC
# checking and connection tracking, without the rules' own.
/usr/bin/time -v "$work/rcconform" audit --format json --rules C9-95 "$big" >"$work/audit-one.json" 2>"$work/time-one.txt" ||
	[[ $? == 1 ]] || die "rcconform audit --rules C9-95 failed"
one_s="$(elapsed_s "$work/time-one.txt")"
one="$(rate "$frames" "$one_s")"
say "audit --rules C9-95: ${one_s}s: $one frames/s, peak RSS $(rss_kb "$work/time-one.txt") KB"

# 4. (c) tshark.
tshark_rate=""
if [[ -n $tshark_bin ]]; then
	decode=()
	# tshark decodes UDP destination port 4791 as InfiniBand (RoCEv2) by
	# default; older versions need it said.
	if [[ -z $("$tshark_bin" -n -r "$tiny" -c 50 -Y infiniband -T fields -e infiniband.bth.psn 2>/dev/null | head -n 1) ]]; then
		decode=(-d udp.port==4791,infiniband)
		say "tshark needs ${decode[*]}"
	fi
	/usr/bin/time -v "$tshark_bin" -n -r "$big" "${decode[@]}" -Y infiniband -T fields -e infiniband.bth.psn \
		>"$work/tshark.out" 2>"$work/time-tshark.txt" || {
		tail -n 20 "$work/time-tshark.txt" >&2
		die "tshark failed"
	}
	lines="$(wc -l <"$work/tshark.out")"
	[[ $lines == "$frames" ]] || say "WARNING: tshark printed $lines PSNs for $frames frames"
	ts="$(elapsed_s "$work/time-tshark.txt")"
	tshark_rate="$(rate "$frames" "$ts")"
	say "tshark: $frames frames in ${ts}s: $tshark_rate frames/s, peak RSS $(rss_kb "$work/time-tshark.txt") KB"
fi

# 5. Summary.
miss=0
check() { # name ok
	if [[ $2 == 1 ]]; then say "target met:    $1"; else
		say "target MISSED: $1"
		miss=1
	fi
}
echo
printf '%-34s %14s\n' "reader" "frames/s"
printf '%-34s %14s\n' "(a) pcapgo bare read" "$bare"
printf '%-34s %14s\n' "(b) rcconform audit --format json" "$audit"
printf '%-34s %14s\n' "    the same, --rules C9-95 only" "$one"
[[ -n $tshark_rate ]] && printf '%-34s %14s\n' "(c) tshark -Y infiniband" "$tshark_rate"
printf 'peak RSS: %s KB at %s frames, %s KB at %s frames\n\n' "$small_rss" "$small" "$best_rss" "$frames"
check "audit >= half the bare read rate ($(awk -v a="$audit" -v b="$bare" 'BEGIN { printf "%.2f", a / b }') of it)" \
	"$(awk -v a="$audit" -v b="$bare" 'BEGIN { print (2 * a >= b) ? 1 : 0 }')"
if [[ -n $tshark_rate ]]; then
	check "audit >= 20x tshark ($(awk -v a="$audit" -v b="$tshark_rate" 'BEGIN { printf "%.1f", a / b }')x)" \
		"$(awk -v a="$audit" -v b="$tshark_rate" 'BEGIN { print (a >= 20 * b) ? 1 : 0 }')"
fi
if [[ $miss == 1 && ${STRICT:-0} == 1 ]]; then
	die "a target was missed"
fi
say "done"
