#!/usr/bin/env bash
# Measures the capture audit against two yardsticks, on a synthetic
# capture of conformant RoCEv2 RC traffic (16 QPs interleaved between two
# hosts, SEND, WRITE, READ and both ATOMICs with their ACKs, READ
# responses and ATOMIC acknowledgments, valid ICRCs), written by
# `rcconform gen-bench-capture`:
#
#   (a) the bare read rate: every frame read with gopacket's pure-Go pcapgo
#       reader and nothing else (cmd/rcconform/internal/benchread);
#   (b) `rcconform audit --format json` on one core (GOMAXPROCS=1) and on
#       every core: frames/s by the wall clock and CPU seconds (user +
#       system, steadier than the wall clock on a shared machine), and
#       peak RSS, on the big capture and on a small one, to show that
#       memory does not grow with the capture's length;
#   (c) `tshark -Y infiniband -T fields -e infiniband.bth.psn`, the usual
#       way to pull PSNs out of a RoCE capture.
#
#   ci/bench-audit.sh [FRAMES]        (default 1000000; at least 1000000 for the figures that count)
#
# RUNS=N (default 3) runs each audit N times and keeps the best wall
# clock (and the least CPU). Targets: all cores >= 1.7x one core, audit
# (all cores) >= 50x tshark, audit (all cores) >= half the bare read
# rate, peak RSS < 100 MB at 1 M frames and flat in the capture's length
# (at 1 M frames within 15 % + 5 MB of a quarter as many). A miss is
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
"$work/rcconform" gen-bench-capture --frames "$frames" --qps 16 --out "$big"
"$work/rcconform" gen-bench-capture --frames "$small" --qps 16 --out "$tiny"
mid="$work/bench-$((frames / 4)).pcap"
"$work/rcconform" gen-bench-capture --frames "$((frames / 4))" --qps 16 --out "$mid"
say "capture: $(du -h "$big" | cut -f1) for $frames frames"
cat "$big" >/dev/null # into the page cache, for every reader alike

# 2. (a) Bare read.
"$work/benchread" -runs 3 "$big" | tee "$work/bare.txt"
bare="$(awk '/^pcapgo:/ { print $(NF-1) }' "$work/bare.txt")"

# 3. (b) Audit: best of RUNS runs on the big capture, on one core and on
# all, and one on the small one.
runs="${RUNS:-3}"
cores="$(nproc)"
cpu_s() { awk -F': ' '/User time \(seconds\)/ { u = $2 } /System time \(seconds\)/ { s = $2 } END { print u + s }' "$1"; }
audit_run() { # GOMAXPROCS capture out.json time.txt
	local status=0
	GOMAXPROCS=$1 /usr/bin/time -v "$work/rcconform" audit --format json "$2" >"$3" 2>"$4" || status=$?
	case $status in
	0) ;;
	1) say "WARNING: the audit found violations in conformant synthetic traffic (false positives); see $3" ;;
	*)
		cat "$4" >&2
		die "rcconform audit exited $status on $2"
		;;
	esac
}
# audit_best GOMAXPROCS: sets best (s), best_cpu (s), best_rss (KB)
audit_best() {
	best="" best_cpu="" best_rss=0
	local i s c r
	for ((i = 1; i <= runs; i++)); do
		audit_run "$1" "$big" "$work/audit-$1.json" "$work/time-$1-$i.txt"
		s="$(elapsed_s "$work/time-$1-$i.txt")"
		c="$(cpu_s "$work/time-$1-$i.txt")"
		r="$(rss_kb "$work/time-$1-$i.txt")"
		((r > best_rss)) && best_rss=$r
		if [[ -z $best ]] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$s; fi
		if [[ -z $best_cpu ]] || awk -v a="$c" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; then best_cpu=$c; fi
		say "audit GOMAXPROCS=$1 run $i: ${s}s wall, ${c}s CPU, ${r} KB"
		# Slow runs are not repeated: their noise is small beside them.
		awk -v s="$s" 'BEGIN { exit !(s > 10) }' && break
	done
	return 0
}
audit_best 1
one_s=$best one_cpu=$best_cpu one_rss=$best_rss
audit_best "$cores"
all_s=$best all_cpu=$best_cpu big_rss=$best_rss
((one_rss > big_rss)) && big_rss=$one_rss
cmp -s "$work/audit-1.json" "$work/audit-$cores.json" || die "the audit on $cores cores gave another result than on one"
one="$(rate "$frames" "$one_s")"
audit="$(rate "$frames" "$all_s")"
audit_run "$cores" "$tiny" "$work/audit-small.json" "$work/time-small.txt"
small_rss="$(rss_kb "$work/time-small.txt")"
audit_run "$cores" "$mid" "$work/audit-mid.json" "$work/time-mid.txt"
mid_rss="$(rss_kb "$work/time-mid.txt")"
roce="$(grep -m1 '"roce_frames"' "$work/audit-1.json" | tr -dc 0-9)"
[[ $roce == "$frames" ]] || die "the audit saw $roce RoCE frames of $frames"
say "audit, 1 core: ${one_s}s, $one frames/s, ${one_cpu}s CPU ($(awk -v c="$one_cpu" -v n="$frames" 'BEGIN { printf "%.0f", c * 1e9 / n }') ns/frame)"
say "audit, $cores cores: ${all_s}s, $audit frames/s, ${all_cpu}s CPU ($(awk -v c="$all_cpu" -v n="$frames" 'BEGIN { printf "%.0f", c * 1e9 / n }') ns/frame)"
say "peak RSS ${big_rss} KB at $frames frames, ${mid_rss} KB at $((frames / 4)), ${small_rss} KB at $small frames"
say "load average $(cut -d' ' -f1-3 /proc/loadavg) on $cores cores: wall-clock figures are only as good as the machine is quiet"

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
	ts_cpu="$(cpu_s "$work/time-tshark.txt")"
	say "tshark: $frames frames in ${ts}s: $tshark_rate frames/s, ${ts_cpu}s CPU, peak RSS $(rss_kb "$work/time-tshark.txt") KB"
fi

# 5. Summary.
miss=0
check() { # name ok
	if [[ $2 == 1 ]]; then say "target met:    $1"; else
		say "target MISSED: $1"
		miss=1
	fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) b = 0.000001; printf "%.2f", a / b }'; }
echo
printf '%-40s %14s\n' "reader" "frames/s"
printf '%-40s %14s\n' "(a) pcapgo bare read" "$bare"
printf '%-40s %14s\n' "(b) rcconform audit, 1 core" "$one"
printf '%-40s %14s\n' "    rcconform audit, $cores cores" "$audit"
[[ -n $tshark_rate ]] && printf '%-40s %14s\n' "(c) tshark -Y infiniband" "$tshark_rate"
printf 'CPU: %s s on 1 core, %s s on %s cores; peak RSS: %s KB at %s frames, %s KB at %s frames\n\n' \
	"$one_cpu" "$all_cpu" "$cores" "$small_rss" "$small" "$big_rss" "$frames"
speedup="$(ratio "$one_s" "$all_s")"
check "$cores cores >= 1.7x one core (${speedup}x)" "$(awk -v r="$speedup" 'BEGIN { print (r >= 1.7) ? 1 : 0 }')"
check "audit >= half the bare read rate ($(ratio "$audit" "$bare") of it)" \
	"$(awk -v a="$audit" -v b="$bare" 'BEGIN { print (2 * a >= b) ? 1 : 0 }')"
if [[ -n $tshark_rate ]]; then
	say "CPU per frame: tshark / audit on 1 core = $(ratio "$ts_cpu" "$one_cpu")x"
	check "audit >= 50x tshark ($(ratio "$audit" "$tshark_rate")x)" \
		"$(awk -v a="$audit" -v b="$tshark_rate" 'BEGIN { print (a >= 50 * b) ? 1 : 0 }')"
fi
check "peak RSS < 100 MB at $frames frames ($((big_rss / 1024)) MB)" "$(((big_rss < 100 * 1024) ? 1 : 0))"
check "peak RSS flat in the capture's length (${mid_rss} KB at $((frames / 4)) frames, ${big_rss} KB at $frames)" \
	"$(awk -v s="$mid_rss" -v b="$big_rss" 'BEGIN { print (b <= 1.15 * s + 5 * 1024) ? 1 : 0 }')"
if [[ $miss == 1 && ${STRICT:-0} == 1 ]]; then
	die "a target was missed"
fi
say "done"
