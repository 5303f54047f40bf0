#!/usr/bin/env bash
# Writes `rcconform audit --format json` of every capture in CAPTURES_DIR (with and
# without --complete, on one core and on every core, all findings kept) and
# of a synthetic benchmark capture into DIR, one file each, so that two
# trees' outputs can be compared byte for byte (diff -r DIR1 DIR2):
#
#   ci/audit-snapshot.sh DIR CAPTURES_DIR   (a folder of captures, searched recursively)
#
# A performance change must leave every file identical, but for the
# suite's commit in each result's certificate (the date is fixed).
set -euo pipefail
export SOURCE_DATE_EPOCH=0
out="$1"
captures="${2:?usage: ci/audit-snapshot.sh DIR CAPTURES_DIR}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ -d $captures ]] || { echo "audit-snapshot: $captures is not a folder" >&2; exit 2; }
captures="$(cd "$captures" && pwd)"
mkdir -p "$out"
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
(cd "$root" && go build -o "$bin/rcconform" ./cmd/rcconform)
"$bin/rcconform" gen-bench-capture --frames 200000 --qps 16 --out "$bin/bench.pcap" >/dev/null
"$bin/rcconform" gen-bench-capture --frames 100000 --qps 500 --out "$bin/bench-500qp.pcap" >/dev/null
out="$(cd "$out" && pwd)"
cd "$bin" # the synthetic capture by a relative name: the same in every run
n=0
while IFS= read -r f; do
	name="$(echo "${f#"$captures"/}" | tr / _)"
	for complete in "" --complete; do
		for procs in 1 2; do
			status=0
			GOMAXPROCS=$procs "$bin/rcconform" audit --format json --max-findings 0 $complete "$f" \
				>"$out/$name${complete}.p$procs.json" 2>"$out/$name${complete}.p$procs.err" || status=$?
			echo "$status" >"$out/$name${complete}.p$procs.rc"
			n=$((n + 1))
		done
	done
done < <({
	find "$captures" -type f \( -name '*.pcap' -o -name '*.pcapng' -o -name '*.gz' \)
	echo bench.pcap
	echo bench-500qp.pcap
} | sort)
echo "audit-snapshot: $n audits in $out"
