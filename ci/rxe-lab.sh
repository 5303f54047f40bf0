#!/usr/bin/env bash
# The soft-RoCE lab: the rule suite against Linux rdma_rxe, a RoCEv2
# implementation nobody here wrote, in a qemu VM, for two Debian kernels and
# two netdev MTUs. Run as root, from the repository:
#
#   bash ci/rxe-lab.sh                       # everything; exit 1 if verdicts differ from ci/rxe/expected.json
#   bash ci/rxe-lab.sh --candidate FILE      # also write the observed verdicts in expected.json's shape
#   bash ci/rxe-lab.sh --configs 6.1-1500    # one configuration (kernel-MTU; several separated by commas)
#   bash ci/rxe-lab.sh --repeat 2            # run each configuration twice and report any verdict that flaps
#
# What it does, per configuration (kernel × MTU):
#   - kernel: `apt-get download` of Debian's linux-image (6.1: linux-image-6.1.0-N-amd64 from bookworm;
#     6.12: linux-image-6.12.N+deb12-amd64 from bookworm-backports), unpacked with `dpkg -x`, through a
#     private apt state under the cache directory (the host's apt configuration is not touched);
#   - initramfs: the kernel's virtio_pci, virtio_net, crc32_generic, rdma_rxe, ib_uverbs and their
#     dependencies (`modprobe --show-depends` against the unpacked tree) + the host's own bookworm
#     userland: busybox, ip and rdma (iproute2), libibverbs1 with the rxe provider, rcconform-agent;
#   - a network namespace made here (`ip netns add`) holding a tap device; qemu (TCG) and the suite run
#     inside it with `ip netns exec`, so the test traffic never leaves the namespace;
#   - in the VM: eth0 gets 192.0.2.2/24 and the MTU, `rdma link add rxe0 type rxe netdev eth0`, and
#     `rcconform-agent --listen=192.0.2.2:4792 --device=rxe0 --token=…`; the host end is 192.0.2.1;
#   - the whole suite with --dut=live; tcpdump on the tap inside the namespace;
#   - then the scenario scripts with `rcconform script --dut live`: the examples (rules/scripts) and
#     the reproducers of rxe's deviations (ci/rxe/repro), each of these under a capture of its own;
#   - out/rxe/<kernel>-<mtu>/: result.json, junit.xml (keyed by clause), report.html, report.md,
#     capture.pcapng (the RoCEv2 traffic on the tap), console.log (the VM's serial console), suite.log,
#     audit.json (`rcconform audit` of capture.pcapng: the capture audit on a real device's traffic),
#     capture-annotated.pcapng (capture.pcapng with that audit's findings as packet comments),
#     traces/ (the suite's --traces: each scenario's trace, one pcapng with its steps and findings as comments),
#     scripts/ (the scripts' results, and each reproducer's NAME.pcapng).
# Everything (VM, tcpdump, tap, namespace) is torn down on exit, whatever happened.
#
# Verdicts: compared with ci/rxe/expected.json (`go run ./ci/rxe/labtool compare`); differences are
# printed and the script exits 1. The capture audit is held to the same verdicts (`labtool passive`):
# it may blame rxe (a finding on a packet 192.0.2.2 sent) only for a clause the live suite fails in
# that configuration; findings on the harness's own packets are its stimuli, counted and not judged. After a change that moves verdicts on purpose, re-baseline:
#   bash ci/rxe-lab.sh --candidate /tmp/rxe-candidate.json
#   go run ./ci/rxe/labtool diff ci/rxe/expected.json /tmp/rxe-candidate.json   # review
#   cp /tmp/rxe-candidate.json ci/rxe/expected.json                             # adopt; then write evidence for new fails
# (see ci/rxe/README.md).
#
# Environment: RXE_LAB_CACHE (default /var/cache/rcconform-rxe) keeps the kernels and apt state, so
# reruns need no download; RXE_LAB_OUT (default out/rxe); RXE_LAB_KERNEL_6_1 / RXE_LAB_KERNEL_6_12
# pin a package name (default: the newest in the archive); RXE_LAB_BOOT_TIMEOUT (default 180 s);
# RXE_LAB_LATENCY (default 1s) and RXE_LAB_SETTLE (default 100ms): the live adapter's latency and settle
# settings, how late the emulated device may answer (qemu TCG on a busy 2-core host answered up to ~400 ms late); it is added only while the device owes an answer.
# A configuration whose VM network stalls (the guest kernel's NETDEV WATCHDOG: qemu's emulated NIC
# stopped sending, a fault of the emulator, not of rxe) is run again once, from a fresh boot; its
# first run's output is kept beside it (DIR.stalled).
# Exit codes: 0 verdicts as expected; 1 verdicts differ (or flap with --repeat); 2 the lab could not
# be set up (download failed, VM did not come up, its network stalled twice); 3 skipped: no root, no
# /dev/net/tun, or qemu cannot be installed (ci/test.sh then says why and goes on).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

cache="${RXE_LAB_CACHE:-/var/cache/rcconform-rxe}"
outroot="${RXE_LAB_OUT:-out/rxe}"
boot_timeout="${RXE_LAB_BOOT_TIMEOUT:-180}"
expected="ci/rxe/expected.json"
configs="6.1-1500,6.1-4500,6.12-1500,6.12-4500"
candidate=""
repeat=1

usage() { sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --candidate) candidate="$2"; shift 2 ;;
    --candidate=*) candidate="${1#*=}"; shift ;;
    --configs) configs="$2"; shift 2 ;;
    --configs=*) configs="${1#*=}"; shift ;;
    --repeat) repeat="$2"; shift 2 ;;
    --repeat=*) repeat="${1#*=}"; shift ;;
    --expected) expected="$2"; shift 2 ;;
    --expected=*) expected="${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "rxe-lab: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

log() { printf '[rxe-lab %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { printf 'rxe-lab: %s\n' "$*" >&2; exit 2; }

skip() { printf 'rxe-lab: skipped: %s\n' "$*" >&2; exit 3; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespace, tap device, apt)"
[ -c /dev/net/tun ] || skip "no /dev/net/tun: a tap device cannot be made here"

t_start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
export GOFLAGS="${GOFLAGS:-} -mod=mod"

# retry N CMD...: runs CMD up to N times, 5 s apart (downloads).
retry() {
  local n=$1 i=1; shift
  until "$@"; do
    if [ "$i" -ge "$n" ]; then return 1; fi
    log "retrying ($i/$n failed): $*"; i=$((i + 1)); sleep 5
  done
}

# ---------------------------------------------------------------- host tools
need_pkgs=()
if ! command -v qemu-system-x86_64 >/dev/null; then
  log "installing qemu-system-x86"
  { retry 3 apt-get update -qq && retry 3 apt-get install -y -qq --no-install-recommends qemu-system-x86 >/dev/null; } \
    || skip "qemu-system-x86 cannot be installed here"
fi
command -v tcpdump >/dev/null || need_pkgs+=(tcpdump)
[ -x /bin/busybox ] && /bin/busybox --list 2>/dev/null | grep -qx cpio || need_pkgs+=(busybox-static)
command -v depmod >/dev/null || need_pkgs+=(kmod)
command -v rdma >/dev/null || need_pkgs+=(iproute2)
dpkg -s libibverbs1 ibverbs-providers >/dev/null 2>&1 || need_pkgs+=(libibverbs1 ibverbs-providers)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  retry 3 apt-get update -qq || die "apt-get update failed"
  retry 3 apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null \
    || die "could not install ${need_pkgs[*]}"
fi
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not available"
rxe_provider=$(ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so 2>/dev/null | head -1)
[ -n "$rxe_provider" ] || die "the rxe provider of libibverbs (ibverbs-providers) is missing"

# ---------------------------------------------------------------- binaries
mkdir -p "$outroot" out
log "building rcconform-agent (-tags verbs) and the rule suite"
bash ci/agent-build.sh out/rcconform-agent >out/rxe/agent-build.log 2>&1 || { cat out/rxe/agent-build.log; die "agent build failed"; }
go test -c -o out/rxe/rules.test ./rules || die "building the rule suite failed"
go build -o out/rxe/rcconform ./cmd/rcconform || die "building rcconform failed"
go build -o out/rxe/labtool ./ci/rxe/labtool || die "building labtool failed"

# ---------------------------------------------------------------- kernels
# Private apt state: bookworm and bookworm-backports from the archive the
# host's own apt uses.
aptdir="$cache/apt"
mkdir -p "$aptdir/lists/partial" "$aptdir/archives/partial" "$aptdir/debs"
mirror=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
  | grep -v security | sed -E 's/^URIs: *//; s/^deb (\[[^]]*\] )?//; s/ .*//' | grep -E '/debian/?$' | head -1 || true)
[ -n "$mirror" ] || die "no Debian archive in the host's apt sources"
printf 'deb %s bookworm main\ndeb %s bookworm-backports main\n' "$mirror" "$mirror" >"$aptdir/sources.list"
aptopts=(-o "Dir::Etc::SourceList=$aptdir/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
  -o "Dir::State::Lists=$aptdir/lists" -o "Dir::Cache=$aptdir" -o "Dir::Cache::Archives=$aptdir/archives"
  -o "Dir::State::Status=/var/lib/dpkg/status" -o "APT::Get::List-Cleanup=false")
lists_fresh() { [ -n "$(find "$aptdir/lists" -maxdepth 1 -name '*backports*Packages*' -mmin -1440 2>/dev/null)" ]; }
if ! lists_fresh; then
  log "apt-get update (private lists: bookworm, bookworm-backports)"
  retry 3 apt-get "${aptopts[@]}" update -qq >/dev/null 2>&1 \
    || { [ -n "$(ls "$aptdir/lists" 2>/dev/null | grep Packages)" ] && log "apt-get update failed: using the cached lists" \
         || die "apt-get update (bookworm-backports) failed"; }
fi

# newest_kernel PATTERN: the newest linux-image package whose name matches PATTERN (ERE).
newest_kernel() {
  apt-cache "${aptopts[@]}" pkgnames linux-image- 2>/dev/null | grep -E "$1" | sort -V | tail -1
}

# kernel_tree SERIES: prints the unpacked tree of that kernel series (cached).
kernel_tree() {
  local series=$1 pat pin pkg deb dir
  case "$series" in
    6.1) pat='^linux-image-6\.1\.0-[0-9]+-amd64$'; pin="${RXE_LAB_KERNEL_6_1:-}" ;;
    6.12) pat='^linux-image-6\.12\.[0-9]+\+deb12-amd64$'; pin="${RXE_LAB_KERNEL_6_12:-}" ;;
    *) die "unknown kernel series $series (6.1 or 6.12)" ;;
  esac
  pkg="${pin:-$(newest_kernel "$pat")}"
  [ -n "$pkg" ] || die "no package matching $pat in bookworm/bookworm-backports"
  dir="$cache/kernels/$pkg"
  if [ ! -f "$dir/.done" ]; then
    log "downloading $pkg" >&2
    rm -rf "$dir"; mkdir -p "$dir"
  local adir="$dir"; case "$dir" in /*) ;; *) adir="$repo/$dir" ;; esac  # the suite runs in rules/
    (cd "$aptdir/debs" && retry 3 apt-get "${aptopts[@]}" download -qq "$pkg" >&2) || die "apt-get download $pkg failed"
    deb=$(ls -t "$aptdir/debs/${pkg}_"*.deb | head -1)
    dpkg -x "$deb" "$dir/root" || die "dpkg -x $deb failed"
    local kver; kver=$(ls "$dir/root/lib/modules" | head -1)
    depmod -b "$dir/root" "$kver" || die "depmod for $pkg failed"
    echo "$pkg $(dpkg-deb -f "$deb" Version) $kver" >"$dir/.done"
    rm -f "$deb"
  fi
  echo "$dir"
}

# modules_cpio TREE: the kernel modules the VM loads, as a gzip'd newc cpio (cached).
modules_cpio() {
  local dir=$1 kver m f rel
  kver=$(awk '{print $3}' "$dir/.done")
  if [ ! -f "$dir/modules.cpio.gz" ]; then
    local stage="$dir/mstage"; rm -rf "$stage"; mkdir -p "$stage/modules"
    : >"$stage/modules/order"
    for m in virtio_pci virtio_net crc32_generic rdma_rxe ib_uverbs; do
      modprobe -d "$dir/root" -S "$kver" --show-depends "$m" 2>/dev/null | awk '$1=="insmod"{print $2}' |
        while read -r f; do
          rel=$(basename "$f"); rel="${rel%.xz}"; rel="${rel%.zst}"
          grep -qx "$rel" "$stage/modules/order" && continue
          case "$f" in
            *.xz) xz -dc "$f" >"$stage/modules/$rel" ;;
            *.zst) zstd -qdc "$f" >"$stage/modules/$rel" ;;
            *) cp "$f" "$stage/modules/$rel" ;;
          esac
          echo "$rel" >>"$stage/modules/order"
        done
    done
    grep -q rdma_rxe "$stage/modules/order" || die "no rdma_rxe module in $dir"
    (cd "$stage" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$dir/modules.cpio.gz.tmp"
    mv "$dir/modules.cpio.gz.tmp" "$dir/modules.cpio.gz"
    rm -rf "$stage"
  fi
  echo "$dir/modules.cpio.gz"
}

# ---------------------------------------------------------------- userland
# The host's own bookworm files: busybox, ip, rdma, libibverbs + rxe provider, the agent.
userland=out/rxe/userland.cpio.gz
build_userland() {
  local st; st=$(mktemp -d)
  mkdir -p "$st"/{usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu/libibverbs,usr/lib64,etc/libibverbs.d,proc,sys,dev,tmp,run}
  ln -s usr/bin "$st/bin"; ln -s usr/sbin "$st/sbin"; ln -s usr/lib "$st/lib"; ln -s usr/lib64 "$st/lib64"
  cp /bin/busybox "$st/usr/bin/busybox"
  cp -L "$(command -v ip)" "$st/usr/bin/ip"
  cp -L "$(command -v rdma)" "$st/usr/bin/rdma"
  cp out/rcconform-agent "$st/usr/bin/rcconform-agent"
  cp -L "$rxe_provider" "$st/usr/lib/x86_64-linux-gnu/libibverbs/"
  cp /etc/libibverbs.d/rxe.driver "$st/etc/libibverbs.d/"
  local lib
  for lib in $( { ldd "$(command -v ip)"; ldd "$(command -v rdma)"; ldd out/rcconform-agent; ldd "$rxe_provider"; } \
      | awk '/=>/ {print $3} /^\t\/lib64/ {print $1}' | sort -u); do
    mkdir -p "$st$(dirname "$lib")"; cp -L "$lib" "$st$lib"
  done
  cp ci/rxe/init "$st/init"; chmod 755 "$st/init"
  (cd "$st" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$userland"
  rm -rf "$st"
}
build_userland

# ---------------------------------------------------------------- one configuration
ns="" qpid="" tdpid=""
teardown() {
  set +e
  [ -n "$tdpid" ] && kill "$tdpid" 2>/dev/null && wait "$tdpid" 2>/dev/null
  [ -n "$qpid" ] && kill "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
  [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
  tdpid="" qpid="" ns=""
  set -e
}
trap 'teardown' EXIT
trap 'teardown; exit 130' INT TERM

host_ip=192.0.2.1 vm_ip=192.0.2.2

# run_scripts CONFIG DIR: the scenario scripts against rxe, after the suite
# (its capture stopped): the examples (rules/scripts) in one run, then each
# reproducer (ci/rxe/repro) under a capture of its own. DIR/scripts/ gets
# `rcconform script --format json` results (labtool compare baselines them
# per script and clause) and, per reproducer, NAME.pcapng and NAME.log.
run_scripts() {
  local cfg=$1 dir=$2 sdir="$2/scripts" f n src rc t0
  mkdir -p "$sdir"
  t0=$(date +%s)
  script_run() {
    ip netns exec "$ns" env RCCONFORM_AGENT_TOKEN="$token" out/rxe/rcconform script --dut live --format json \
      --settings="device=$vm_ip,agent=$vm_ip:4792,latency=${RXE_LAB_LATENCY:-1s},settle=${RXE_LAB_SETTLE:-100ms}" "$@"
  }
  rc=0; script_run rules/scripts >"$sdir/examples.json" 2>"$sdir/examples.log" || rc=$?
  [ "$rc" -ne 2 ] || log "$cfg: the example scripts could not run: $(tail -3 "$sdir/examples.log")"
  for f in ci/rxe/repro/*.rcs; do
    n=$(basename "$f" .rcs)
    ip netns exec "$ns" tcpdump -i tap0 -s 0 -U -w "$sdir/$n.pcap" 'udp port 4791' >"$sdir/$n.tcpdump.log" 2>&1 &
    tdpid=$!
    # capturing once it says so (on a loaded host that takes seconds)
    for _ in $(seq 1 100); do grep -qs 'listening on' "$sdir/$n.tcpdump.log" && break; sleep 0.1; done
    sleep 0.3
    rc=0; script_run "$f" >"$sdir/$n.json" 2>"$sdir/$n.log" || rc=$?
    [ "$rc" -ne 2 ] || log "$cfg: $f could not run: $(tail -3 "$sdir/$n.log")"
    sleep 0.5
    kill "$tdpid" 2>/dev/null; wait "$tdpid" 2>/dev/null || true; tdpid=""
    out/rxe/labtool pcapng "$sdir/$n.pcap" "$sdir/$n.pcapng" && rm -f "$sdir/$n.pcap" "$sdir/$n.tcpdump.log"
  done
  log "$cfg: scripts done after $(( $(date +%s) - t0 )) s"
}

# run_config KERNEL MTU DIR: boots the VM and runs the suite; returns 0 when the suite produced a
# result, 4 when the VM's network stalled (its results are not to be read), 2 on any other failure.
run_config() {
  local series=$1 mtu=$2 dir=$3 tree kpkg token rc
  # (errexit does not hold inside a function called from `if`: every step is checked)
  tree=$(kernel_tree "$series") && [ -f "$tree/.done" ] || return 2
  kpkg=$(cat "$tree/.done")
  local mcpio; mcpio=$(modules_cpio "$tree") && [ -f "$mcpio" ] || return 2
  rm -rf "$dir"; mkdir -p "$dir"
  local adir="$dir"; case "$dir" in /*) ;; *) adir="$repo/$dir" ;; esac  # the suite runs in rules/
  cat "$mcpio" "$userland" >"$dir/initrd.img" || return 2
  token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  ns="rcconform-rxe-$$"
  { ip netns add "$ns" &&
    ip -n "$ns" link set lo up &&
    ip -n "$ns" tuntap add dev tap0 mode tap &&
    ip -n "$ns" link set tap0 mtu "$mtu" up &&
    ip -n "$ns" addr add "$host_ip/24" dev tap0; } || { log "$series-$mtu: cannot make the namespace and its tap"; teardown; return 2; }
  log "$series-$mtu: booting $kpkg (netdev MTU $mtu)"
  # The kernel's jiffy (CONFIG_HZ of the unpacked image), for the agent to
  # report as rxe's timer granularity: the findings on early timers name it
  # (it is never added to the harness's tolerance).
  local kver hz; kver=$(awk '{print $3}' "$tree/.done")
  hz=$(sed -n 's/^CONFIG_HZ=\([0-9]*\)$/\1/p' "$tree/root/boot/config-$kver" 2>/dev/null | head -1)
  local t0; t0=$(date +%s)
  ip netns exec "$ns" qemu-system-x86_64 -accel tcg -cpu max -smp 1 -m 1536 \
    -kernel "$tree/root/boot/vmlinuz-$(awk '{print $3}' "$tree/.done")" -initrd "$dir/initrd.img" \
    -append "console=ttyS0 panic=-1 quiet loglevel=4 rxelab.mtu=$mtu rxelab.ip=$vm_ip rxelab.token=$token rxelab.hz=${hz:-0}" \
    -netdev tap,id=n0,ifname=tap0,script=no,downscript=no -device virtio-net-pci,netdev=n0 \
    -display none -serial "file:$dir/console.log" -monitor none -no-reboot -nodefaults \
    >"$dir/qemu.log" 2>&1 &
  qpid=$!
  # ready when the agent answers on its port (the console says so too)
  local ok=""
  for _ in $(seq 1 "$boot_timeout"); do
    if grep -q 'agent protocol on' "$dir/console.log" 2>/dev/null &&
       ip netns exec "$ns" bash -c "exec 3<>/dev/tcp/$vm_ip/4792" 2>/dev/null; then ok=1; break; fi
    kill -0 "$qpid" 2>/dev/null || break
    grep -q 'rxe-lab: FAILED' "$dir/console.log" 2>/dev/null && break
    sleep 1
  done
  if [ -z "$ok" ]; then
    log "$series-$mtu: the VM did not come up within ${boot_timeout}s; console:"; tail -30 "$dir/console.log" >&2; cat "$dir/qemu.log" >&2
    teardown; return 2
  fi
  log "$series-$mtu: agent ready after $(( $(date +%s) - t0 )) s"
  ip netns exec "$ns" tcpdump -i tap0 -s 0 -U -w "$dir/capture.pcap" 'udp port 4791 or arp' >"$dir/tcpdump.log" 2>&1 &
  tdpid=$!
  sleep 1
  log "$series-$mtu: running the suite (--dut=live)"
  local t1; t1=$(date +%s)
  set +e
  # The scenario scripts run after the suite, through `rcconform script`
  # (below), each baselined on its own: not in the suite (--scripts=),
  # whose clause verdicts they would blur.
  (cd rules && timeout "${RXE_LAB_SUITE_TIMEOUT:-1200}" ip netns exec "$ns" env RCCONFORM_AGENT_TOKEN="$token" "$repo/out/rxe/rules.test" \
     -ginkgo.no-color -ginkgo.timeout=30m --dut=live --scripts= \
     --settings="device=$vm_ip,agent=$vm_ip:4792,latency=${RXE_LAB_LATENCY:-1s},settle=${RXE_LAB_SETTLE:-100ms}" \
     --json="$adir/result.json" --junit="$adir/junit.xml" --traces="$adir/traces") >"$dir/suite.log" 2>&1
  rc=$?
  set -e
  log "$series-$mtu: suite exit $rc after $(( $(date +%s) - t1 )) s ($(grep -Eo 'Ran [0-9]+ of [0-9]+ Specs' "$dir/suite.log" | tail -1))"
  kill "$tdpid" 2>/dev/null; wait "$tdpid" 2>/dev/null || true; tdpid=""
  run_scripts "$series-$mtu" "$dir"
  teardown
  rm -f "$dir/initrd.img"
  if grep -q 'NETDEV WATCHDOG' "$dir/console.log" 2>/dev/null; then
    log "$series-$mtu: the VM's network stalled (the guest saw its emulated NIC stop sending: $(grep -m1 'NETDEV WATCHDOG' "$dir/console.log" | sed 's/^\[[^]]*\] //'))"
    return 4
  fi
  if [ ! -s "$dir/result.json" ]; then
    log "$series-$mtu: no result.json; the suite said:"; tail -40 "$dir/suite.log" >&2; return 2
  fi
  out/rxe/labtool pcapng "$dir/capture.pcap" "$dir/capture.pcapng" && rm -f "$dir/capture.pcap"
  local arc=0
  out/rxe/rcconform audit --max-findings 0 --format json --out "$dir/audit.json" --annotate "$dir/capture-annotated.pcapng" \
    "$dir/capture.pcapng" >/dev/null 2>"$dir/audit.log" || arc=$?
  [ "$arc" -le 1 ] || log "$series-$mtu: the capture audit failed (exit $arc): $(tail -3 "$dir/audit.log")"
  out/rxe/rcconform report --in "$dir/result.json" --html "$dir/report.html" --markdown "$dir/report.md" >/dev/null \
    || log "$series-$mtu: rendering the report failed"
  echo "$kpkg" >"$dir/kernel.txt"
  return 0
}

status=0
results=()
passives=()
IFS=',' read -r -a cfglist <<<"$configs"
for cfg in "${cfglist[@]}"; do
  series="${cfg%-*}" mtu="${cfg##*-}"
  for r in $(seq 1 "$repeat"); do
    d="$outroot/$cfg"; [ "$repeat" -gt 1 ] && d="$outroot/$cfg.run$r"
    rc=0; run_config "$series" "$mtu" "$d" || rc=$?
    if [ "$rc" -eq 4 ]; then
      rm -rf "$d.stalled"; mv "$d" "$d.stalled"
      log "$cfg: running it again from a fresh boot"
      rc=0; run_config "$series" "$mtu" "$d" || rc=$?
    fi
    if [ "$rc" -ne 0 ]; then status=2; continue; fi
    results+=("$cfg=$d/result.json")
    passives+=("$cfg=$d")
  done
  if [ "$repeat" -gt 1 ]; then rm -rf "$outroot/$cfg"; cp -r "$outroot/$cfg.run1" "$outroot/$cfg"; fi
done
[ "$status" -eq 0 ] || die "some configurations did not run"

cmp_args=(--expected "$expected")
[ -n "$candidate" ] && cmp_args+=(--candidate "$candidate")
set +e
out/rxe/labtool compare "${cmp_args[@]}" "${results[@]}"
status=$?
out/rxe/labtool passive --expected "$expected" --device "$vm_ip" "${passives[@]}"
pst=$?
[ "$status" -ne 0 ] || status=$pst
set -e
for cfg in "${cfglist[@]}"; do
  [ -f "$outroot/$cfg/kernel.txt" ] && log "$cfg ran $(cut -d' ' -f1,2 "$outroot/$cfg/kernel.txt")"
done
[ "$status" -eq 0 ] || log "the baseline's kernels are named in $expected (configs[].package): a newer Debian kernel may move verdicts"
log "done in $(( $(date +%s) - t_start )) s; results in $outroot/"
exit "$status"
