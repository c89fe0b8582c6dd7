#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The two-VM testbed: one odl-linkd and two QEMUs (TCG) whose odl-usb4-nhi
# devices are joined by the modelled cable. Backs `odl vm`.
#
# Usage:
#   testbed.sh up [--kernel 6.12|6.1] [--gen tb3|gen2|gen3|gen4] [--lanes 1|2] [--timeout S]
#                 [--asymmetric]                      Gen4 x2 as 3 lanes A->B, 1 back (USB4 v2)
#                 [--iommu off|translated|pt]         a virtual Intel IOMMU in front of the guests'
#                                                     PCI devices: translated (DMA domains) or
#                                                     passthrough (iommu=pt); off by default
#                 [--hosts 3|4] [--topology T]        more guests (C, D): cables by T = ring (default),
#                                                     line, star (A to each) or pairs "0-1,1-2";
#                                                     cable N joins the Nth pair (docs/vm.md)
#                 [--cmd-file F]                      F runs in every guest after the modules load
#                 [--deterministic [--seed N]]        QEMU -icount, odl-linkd grants windows of simulated
#                                                     time: the same run every time (docs/vm.md)
#                 [--root]                            boot the Debian-root guests (HIL targets):
#                                                     systemd, sshd on a loopback-forwarded port,
#                                                     nothing of OdinLink installed; writes
#                                                     $ODL_VM_DIR/hil/inventory.yaml
#                                                     start, wait until both guests are ready
#   testbed.sh replay DIR [--force]                   boot a deterministic run again exactly as the one
#                                                     that left DIR ($ODL_VM_DIR/replay), after checking
#                                                     that QEMU, odl-linkd, the guest image and the
#                                                     command file are the same bytes (--force: warn only)
#   testbed.sh down                                   stop everything (always safe)
#   testbed.sh exec A|B|C|D CMD...                    run CMD in a guest, print output, exit with its status
#   testbed.sh console A|B|C|D [--follow]             print (or follow) a guest's serial console log
#   testbed.sh kill A|B|C|D                           SIGKILL one QEMU (tests: the peer must survive)
#   testbed.sh reset A|B|C|D [--off S]                host reset: power one VM off (for S seconds) and on again, wait until ready
#   testbed.sh cable [N] plug|unplug|retrain          scenario event on modelled cable N (default 0)
#   testbed.sh cable [N] degrade GEN LANES | ber RATE (GEN gen2|gen3|gen4, LANES 1|2; RATE 0..1e-3)
#   testbed.sh ctl CMD...                             any odl-linkd control command (e.g. "fault status"); prints the reply
#   testbed.sh status                                 what runs
# Environment:
#   ODL_LINKD      odl-linkd binary (default: $ODL_BUILD_DIR/model/src/linkd/odl-linkd)
#   ODL_VM_DIR     state, sockets and logs (default: ${XDG_RUNTIME_DIR:-/tmp}/odl-vm-$UID)
#   ODL_LINKD_ARGS extra odl-linkd options (e.g. --record FILE)
#   ODL_VM_MEM     guest memory, MiB (default 512)
#   ODL_VM_SHARED_RAM  1 (default): guest RAM shared with odl-linkd for direct
#                  DMA; 0: private RAM, every DMA a socket round trip
#   ODL_VM_ACCEL   tcg (default) or kvm (-cpu host; only where KVM is known to work)
#   ODL_VM_SLUB_DEBUG  1 (default): guests boot with slub_debug=FZP (SLUB checks,
#                  red zones, poisoning); 0: without
#   ODL_VM_MITIGATIONS  0 (default): guests boot with mitigations=off; 1: the
#                  kernel's own speculation mitigations (retpolines and the rest)
#   ODL_VM_KERNEL_ARGS  more words for the guests' kernel command line
#   ODL_VM_IOMMU   off (default), translated or pt: up's --iommu for every test
#                  that brings the testbed up (the whole vm suite behind an IOMMU)
#   ODL_VM_QEMU_ARGS  extra QEMU options for both VMs (e.g. -trace 'odl_nhi_*')
#   ODL_VM_ICOUNT_SHIFT  --deterministic: QEMU's -icount shift (default 0: 1 ns per instruction)
#   ODL_VM_EXEC_TIMEOUT  seconds per exec (default 60)
#   ODL_TESTBED_OWNER  a process id: up also starts a watchdog that tears the
#                  testbed down once that process is gone without doing so
#                  (a test killed at its ctest timeout, `odl run` killed); unset:
#                  the testbed stays up until down
#   ODL_QEMU       a QEMU binary with odl-usb4-nhi built before (skips build-qemu.sh)
#   ODL_GUEST_IMAGE  a guest image directory built before (vmlinuz, initrd.gz,
#                  KERNEL_VERSION; skips build-guest.sh and ODL_GUEST_EXTRA)
#   ODL_VM_BIOS_DIR  firmware directory searched before the Debian ones
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
dir=${ODL_VM_DIR:-${XDG_RUNTIME_DIR:-/tmp}/odl-vm-$(id -u)}
all_vms=(A B C D)
vms=(A B)
# A testbed brought up with --hosts 3 or 4 has more guests.
if [ -f "$dir/hosts" ]; then
	case "$(cat "$dir/hosts")" in
	3) vms=(A B C) ;;
	4) vms=(A B C D) ;;
	esac
fi

say() { printf 'odl: vm: %s\n' "$*" >&2; }
die() { printf 'odl: vm: error: %s\n' "$*" >&2; exit 1; }

vm_index() {
	local i
	for i in "${!vms[@]}"; do
		[ "${1^^}" = "${vms[$i]}" ] && { echo "$i"; return 0; }
	done
	die "unknown VM '$1' (have: ${vms[*]})"
}
vm_name() {
	local i
	i=$(vm_index "$1") || exit 1  # not ${vms[$(...)]}: a bad name would read as A
	echo "${vms[$i]}"
}

# shellcheck source=qemu-device/pid_lib.sh
. "$here/pid_lib.sh"
alive() { pidfile_runs "$1"; }

# Stop one process from its pid file: TERM, up to 5 s, then KILL.
stop_pid() {
	local f=$1 pid i
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if pid_runs "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 100); do
			pid_runs "$pid" || break
			sleep 0.05
		done
		! pid_runs "$pid" || kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

# With ODL_TESTBED_OWNER: a process of its own session (it must outlive
# the owner, whose process group may be killed with it) that runs down once
# the owner is gone, and ends by itself once the testbed is down (its
# linkd.pid gone) or after a day. A testbed of an owner that was SIGKILLed
# (a ctest timeout kills the test's shell alone) would run on forever.
start_watchdog() {
	local owner=${ODL_TESTBED_OWNER:-}
	[ -n "$owner" ] || return 0
	pid_runs "$owner" || die "ODL_TESTBED_OWNER=$owner: no such process"
	stop_pid "$dir/watchdog.pid"  # an earlier up's, in this folder
	ODL_VM_DIR=$dir setsid bash -c '
		owner=$1 dir=$2 tb=$3
		. "$(dirname "$tb")/pid_lib.sh"
		for _ in $(seq 86400); do
			[ -f "$dir/linkd.pid" ] || exit 0
			if ! pid_runs "$owner"; then
				rm -f "$dir/watchdog.pid"
				echo "odl: vm: owner $owner gone: tearing the testbed down" >>"$dir/watchdog.log"
				exec "$tb" down quiet
			fi
			sleep 1
		done' watchdog "$owner" "$dir" "$here/testbed.sh" >/dev/null 2>&1 </dev/null &
	echo $! >"$dir/watchdog.pid"
}

cmd_down() {
	local v
	stop_pid "$dir/watchdog.pid"  # not when it runs this itself: it took its file away
	for v in "${all_vms[@]}"; do stop_pid "$dir/$v.qemu.pid"; done
	stop_pid "$dir/linkd.pid"
	rm -f "$dir"/*.ctl "$dir/linkd.sock" "$dir/linkd.ctl" "$dir/hosts"
	[ "${1:-}" = quiet ] || say "down (logs kept in $dir)"
}

find_linkd() {
	local c
	for c in "${ODL_LINKD:-}" "${ODL_BUILD_DIR:-$repo/build}/model/src/linkd/odl-linkd"; do
		[ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
	done
	die "odl-linkd not found (set ODL_LINKD or build the model)"
}

# Block until @file contains @pattern, the pid in @pidfile dies, or @secs pass.
wait_for() {
	local file=$1 pattern=$2 pidfile=$3 secs=$4 i
	for i in $(seq $((secs * 10))); do
		grep -q -- "$pattern" "$file" 2>/dev/null && return 0
		alive "$pidfile" || return 1
		sleep 0.1
	done
	return 1
}

# A free loopback port (the kernel picks it; taken again by QEMU at once).
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# For --root: the SSH ports and an inventory that reaches both guests the
# way a lab's reaches its hosts (docs/hil.md): the image's client key and a
# known-hosts file naming the image's host key at exactly these ports.
root_prepare() {
	local image=$1 v port h="$dir/hil"
	rm -rf "$h"
	mkdir -p "$h"
	install -m 600 "$image/id_ed25519" "$h/id_ed25519"
	: >"$h/known_hosts"
	for v in "${vms[@]}"; do
		port=$(free_port) || die "no free loopback port for VM $v's SSH"
		echo "$port" >"$dir/$v.ssh_port"
		echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$image/host_key.pub")" >>"$h/known_hosts"
	done
	cat >"$h/inventory.yaml" <<-EOF
	# The testbed's Debian-root guests as a HIL pair (written by testbed.sh up --root).
	inventory: 1
	ssh:
	  user: root
	  key: id_ed25519
	  known_hosts: known_hosts
	  connect_timeout: 60
	pairs:
	  - name: testbed-vm
	    profile: testbed-vm
	    expect: ${gen/tb3/gen3}x${lanes}
	    hosts:
	      a: { destination: 127.0.0.1, port: $(cat "$dir/A.ssh_port") }
	      b: { destination: 127.0.0.1, port: $(cat "$dir/B.ssh_port") }
	EOF
}

# replay_hash FILE: its SHA-256.
replay_hash() { sha256sum "$1" | cut -d' ' -f1; }

# What a deterministic run depends on, one "sha256 NAME HASH" line each.
replay_parts() {
	local qemu=$1 linkd=$2 image=$3 cmd_file=$4 kargs=$5
	echo "sha256 qemu $(replay_hash "$qemu")"
	echo "sha256 odl-linkd $(replay_hash "$linkd")"
	echo "sha256 vmlinuz $(replay_hash "$image/vmlinuz")"
	echo "sha256 initrd $(replay_hash "$image/initrd.gz")"
	[ -z "$cmd_file" ] || echo "sha256 cmd-file $(replay_hash "$cmd_file")"
	# The guests' kernel command line (ODL_VM_SLUB_DEBUG, ODL_VM_MITIGATIONS,
	# ODL_VM_KERNEL_ARGS): a replay booted with other words runs otherwise.
	echo "sha256 kernel-args $(replay_hash <(printf '%s' "$kargs"))"
}

cmd_up() {
	local up_args=("$@")
	local kernel=6.12 timeout=180 gen=gen3 lanes=2 cmd_file="" root=0 iommu=${ODL_VM_IOMMU:-off} asym=()
	local nhosts=2 topology=ring det=0 seed=1
	while [ $# -gt 0 ]; do
		case "$1" in
		--deterministic) det=1; shift ;;
		--seed) seed=$2; shift 2 ;;
		--hosts) nhosts=$2; shift 2 ;;
		--topology) topology=$2; shift 2 ;;
		--cmd-file) cmd_file=$2; shift 2 ;;
		--asymmetric) asym=(--asymmetric); shift ;;
		--root) root=1; shift ;;
		--kernel) kernel=$2; shift 2 ;;
		--gen) gen=$2; shift 2 ;;
		--lanes) lanes=$2; shift 2 ;;
		--timeout) timeout=$2; shift 2 ;;
		--iommu) iommu=$2; shift 2 ;;
		*) die "up: unknown option '$1'" ;;
		esac
	done
	case "$iommu" in
	off | translated | pt) ;;
	*) die "up: --iommu must be off, translated or pt, not '$iommu'" ;;
	esac
	[ ${#asym[@]} = 0 ] || { [ "$gen" = gen4 ] && [ "$lanes" = 2 ]; } ||
		die "up: --asymmetric is a Gen4 cable: --gen gen4 --lanes 2 (3 lanes A->B, 1 back)"
	[[ "$seed" =~ ^[0-9]{1,18}$ ]] || die "up: --seed must be a whole number, not '$seed'"
	if [ "$det" = 1 ]; then
		# A host reset or a booted Debian root restarts one guest's clock:
		# the others' simulated time has moved on. Refused, not ignored.
		[ "$root" = 0 ] || die "up: --deterministic boots the busybox guests, not --root"
		[ "${ODL_VM_ACCEL:-tcg}" = tcg ] || die "up: --deterministic needs TCG (instruction counting), not ODL_VM_ACCEL=${ODL_VM_ACCEL}"
	fi
	case "$nhosts" in
	2 | 3 | 4) ;;
	*) die "up: --hosts must be 2, 3 or 4, not '$nhosts'" ;;
	esac
	if [ "$nhosts" != 2 ]; then
		# A lab pair, the asymmetric cable's fast end: two hosts.
		[ "$root" = 0 ] || die "up: --root boots a HIL pair: 2 hosts"
		[ ${#asym[@]} = 0 ] || die "up: --asymmetric needs 2 hosts"
	fi
	mkdir -p "$dir"
	for v in "${all_vms[@]}"; do
		alive "$dir/$v.qemu.pid" && die "testbed already up (odl vm down first)"
	done
	alive "$dir/linkd.pid" && die "testbed already up (odl vm down first)"
	vms=("${all_vms[@]:0:$nhosts}")
	local linkd qemu image
	linkd=$(find_linkd)
	# Prebuilt ones (a bench bundle on a host without Debian's sources).
	if [ -n "${ODL_QEMU:-}" ]; then
		[ -x "$ODL_QEMU" ] || die "ODL_QEMU=$ODL_QEMU is not an executable"
		qemu=$ODL_QEMU
	else
		qemu=$("$here/build-qemu.sh" | tail -n1) || die "QEMU build failed"
	fi
	[ "$root" = 0 ] || [ -z "$cmd_file" ] || die "up: --cmd-file is for the busybox guests, not --root"
	if [ "$root" = 1 ]; then
		image=$("$here/guest/build-rootfs.sh" "$kernel" | tail -n1) || die "root filesystem build failed"
	elif [ -n "${ODL_GUEST_IMAGE:-}" ]; then
		for f in vmlinuz initrd.gz KERNEL_VERSION; do
			[ -f "$ODL_GUEST_IMAGE/$f" ] || die "ODL_GUEST_IMAGE=$ODL_GUEST_IMAGE has no $f"
		done
		image=$ODL_GUEST_IMAGE
	else
		image=$("$here/guest/build-guest.sh" "$kernel" | tail -n1) || die "guest image build failed"
	fi

	# The IOMMU comes before the PCI devices it translates for; the guest
	# turns it on (Debian leaves it off) in DMA-domain or passthrough mode.
	local iommu_dev=() kargs=""  # extra kernel arguments
	# Deterministic: commands come through the device's mailbox (the guest's
	# agent), replies go to a file: a serial line's input arrives at
	# wall-clock moments, and one that cannot take output makes a guest wait.
	[ "$det" = 0 ] || kargs=" odl.det=1"
	if [ "$iommu" != off ]; then
		iommu_dev=(-device intel-iommu)
		kargs+=" intel_iommu=on"
		[ "$iommu" = pt ] && kargs+=" iommu=pt"
	fi
	# SLUB's sanity checks, red zones and poisoning: a module that overruns
	# or reuses freed memory gets a "BUG <cache>" report the tests look for.
	# (Debian builds no kmemleak.) ODL_VM_SLUB_DEBUG=0 turns it off.
	[ "${ODL_VM_SLUB_DEBUG:-1}" = 0 ] || kargs+=" slub_debug=FZP"
	# No speculation mitigations: the guests run only the tests' own code,
	# and under TCG every retpolined indirect call leaves QEMU's chained
	# translation blocks (vm_kmod_6.1 alone: 277 s with them, 236-248 s
	# without; docs/ci.md). ODL_VM_MITIGATIONS=1 keeps the kernel's default.
	[ "${ODL_VM_MITIGATIONS:-0}" = 1 ] || kargs+=" mitigations=off"
	# Anything more for the guests' kernel command line. All of these are
	# part of what a deterministic run depends on (replay_parts).
	[ -z "${ODL_VM_KERNEL_ARGS:-}" ] || kargs+=" $ODL_VM_KERNEL_ARGS"

	# What a deterministic run depends on (its replay folder), and a replay
	# (cmd_replay) must boot the same bytes as the run it repeats.
	local parts=""
	[ "$det" = 0 ] || parts=$(replay_parts "$qemu" "$linkd" "$image" "$cmd_file" "$kargs")
	if [ -n "${ODL_VM_REPLAY_FILE:-}" ]; then
		local want have diff
		want=$(grep '^sha256 ' "$ODL_VM_REPLAY_FILE")
		have=$parts
		if [ "$want" != "$have" ]; then
			diff=$(diff <(echo "$want") <(echo "$have") | sed -n 's/^> sha256 \([^ ]*\) .*/\1/p' | paste -sd " " - || true)
			[ "${ODL_VM_REPLAY_FORCE:-0}" = 1 ] ||
				die "replay: not the same ${diff:-parts} as the recorded run (rebuilt or changed since?); --force replays anyway"
			say "replay: warning: not the same ${diff:-parts} as the recorded run (--force)"
		fi
	fi

	# From here on, any failure or Ctrl-C tears everything down.
	trap 'say "interrupted, tearing down"; cmd_down quiet; exit 130' INT TERM
	trap 'rc=$?; if [ $rc -ne 0 ]; then cmd_down quiet; fi' EXIT

	rm -f "$dir"/*.log "$dir"/*.ctl "$dir/linkd.sock" "$dir/deterministic"
	local start=$SECONDS
	say "starting odl-linkd"
	local det_linkd=()
	[ "$det" = 0 ] || det_linkd=(--deterministic --seed "$seed")
	# shellcheck disable=SC2086 # ODL_LINKD_ARGS: words on purpose
	SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 setsid "$linkd" --socket "$dir/linkd.sock" \
		--control "$dir/linkd.ctl" --hosts "$nhosts" --topology "$topology" --gen "$gen" --lanes "$lanes" "${asym[@]}" \
		"${det_linkd[@]}" ${ODL_LINKD_ARGS:-} >"$dir/linkd.log" 2>&1 </dev/null &
	echo $! >"$dir/linkd.pid"
	echo "$nhosts" >"$dir/hosts"
	start_watchdog
	local i
	for i in $(seq 50); do
		[ -S "$dir/linkd.sock" ] && break
		alive "$dir/linkd.pid" || { cat "$dir/linkd.log" >&2; die "odl-linkd exited"; }
		sleep 0.1
	done
	[ -S "$dir/linkd.sock" ] || die "odl-linkd did not create its socket"

	# A command file rides along as a second initramfs archive (/odl/cmd);
	# the kernel unpacks concatenated archives in order.
	local initrd="$image/initrd.gz"
	if [ -n "$cmd_file" ]; then
		[ -f "$cmd_file" ] || die "command file $cmd_file not found"
		mkdir -p "$dir/cmd-root/odl"
		cp "$cmd_file" "$dir/cmd-root/odl/cmd"
		# The same bytes every time: a deterministic run must boot the
		# very same initramfs.
		{ cat "$image/initrd.gz"; "$here/guest/pack-initramfs.sh" "$dir/cmd-root"; } >"$dir/initrd-cmd.gz"
		rm -rf "$dir/cmd-root"
		initrd="$dir/initrd-cmd.gz"
	fi

	# Guest RAM in a shared memfd: the device hands it to odl-linkd, which
	# then serves DMA into RAM itself (no socket round trip per access).
	# ODL_VM_SHARED_RAM=0 keeps private RAM (every DMA a message).
	local mem=${ODL_VM_MEM:-512}
	# A root guest compiles odl_tb5 through DKMS: more room.
	[ "$root" = 0 ] || mem=${ODL_VM_MEM:-1024}
	local machine=(-M q35 -m "$mem")
	if [ "${ODL_VM_SHARED_RAM:-1}" != 0 ]; then
		machine=(-object "memory-backend-memfd,id=odl-ram,size=${mem}M,share=on"
			-M q35,memory-backend=odl-ram -m "$mem")
	fi
	local v idx accel=(-accel tcg -cpu max) boot=() det_dev=""
	if [ "$det" = 1 ]; then
		# Instruction counting (1 ns per instruction, no sleeping: idle time
		# jumps to the next timer), a guest clock and random numbers (RDRAND)
		# that depend on nothing outside the run.
		accel+=(-icount "shift=${ODL_VM_ICOUNT_SHIFT:-0},sleep=off" -rtc "clock=vm,base=2026-01-01T00:00:00"
			-seed "$seed")
		det_dev=",deterministic=on"
	fi
	[ "$root" = 0 ] || root_prepare "$image"
	[ "${ODL_VM_ACCEL:-tcg}" = kvm ] && accel=(-accel kvm -cpu host)
	for v in "${vms[@]}"; do
		idx=$(vm_index "$v")
		if [ "$root" = 1 ]; then
			# The disk is shared read-only by both guests (snapshot=on: writes
			# go to a temporary file in TMPDIR, gone with QEMU); the
			# management NIC reaches nothing but its forwarded SSH port.
			boot=(-kernel "$image/vmlinuz" -initrd "$image/initrd.img"
				-append "root=/dev/vda rw console=ttyS0 panic=-1 odl.host=$v$kargs"
				-drive "file=$image/root.ext4,format=raw,if=none,id=root,snapshot=on"
				-device virtio-blk-pci,drive=root
				-netdev "user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:$(cat "$dir/$v.ssh_port")-:22"
				-device virtio-net-pci,netdev=mgmt,romfile= ) # no PXE ROM: it boots from -kernel
		else
			boot=(-kernel "$image/vmlinuz" -initrd "$initrd"
				-append "console=ttyS0 panic=-1 odl.host=$v$kargs" -net none)
		fi
		local ctl_dev=(-chardev "socket,id=ctl,path=$dir/$v.ctl,server=on,wait=off")
		[ "$det" = 0 ] || ctl_dev=(-chardev "file,id=ctl,path=$dir/$v.agent.log")
		say "starting VM $v ($(cat "$image/KERNEL_VERSION"), ${ODL_VM_ACCEL:-tcg})"
		# shellcheck disable=SC2206 # ODL_VM_QEMU_ARGS: words on purpose
		local argv=("$qemu" ${ODL_VM_BIOS_DIR:+-L "$ODL_VM_BIOS_DIR"} -L /usr/share/qemu -L /usr/share/seabios
			-name "odl-$v" "${accel[@]}" "${machine[@]}" -smp 1 "${iommu_dev[@]}"
			-display none -vga none -monitor none -no-reboot -parallel none
			"${boot[@]}"
			-chardev "file,id=con,path=$dir/$v.console.log" -serial chardev:con
			"${ctl_dev[@]}" -serial chardev:ctl
			-device "odl-usb4-nhi,socket=$dir/linkd.sock,host-id=$idx$det_dev"
			-d guest_errors ${ODL_VM_QEMU_ARGS:-})
		# Kept for `reset`, which starts the guest again exactly so.
		printf '%s\0' "${argv[@]}" >"$dir/$v.argv"
		start_qemu "$v" "${argv[@]}"
	done
	for v in "${vms[@]}"; do
		await_ready "$v" "$timeout" "failed to boot"
		say "VM $v ready ($((SECONDS - start)) s)"
	done
	alive "$dir/linkd.pid" || die "odl-linkd died during boot"
	echo "$kernel" >"$dir/kernel"
	if [ "$det" = 1 ]; then
		# What it takes to run this again exactly (testbed.sh replay DIR).
		touch "$dir/deterministic"
		local rdir="$dir/replay" a
		rm -rf "$rdir"
		mkdir -p "$rdir"
		[ -z "$cmd_file" ] || cp "$cmd_file" "$rdir/cmd"
		{
			echo "odl-deterministic-run 1"
			echo "# $(date -u +%FT%TZ); rerun exactly: testbed.sh replay $rdir (copy the folder away first)"
			for a in "${up_args[@]}"; do
				[ "$a" = "$cmd_file" ] && [ -n "$cmd_file" ] && a=cmd  # the copy beside this file
				printf 'arg %s\n' "$a"
			done
			# odl-linkd's options but where it writes its record and windows
			# (outputs: a replay names its own with ODL_LINKD_ARGS).
			local largs=() skip=0 w
			# shellcheck disable=SC2086 # words on purpose
			for w in ${ODL_LINKD_ARGS:-}; do
				if [ "$skip" = 1 ]; then skip=0; continue; fi
				case "$w" in
				--record | --windows) skip=1; continue ;;
				--record=* | --windows=*) continue ;;
				esac
				largs+=("$w")
			done
			printf 'env ODL_LINKD_ARGS=%s\n' "${largs[*]}"
			echo "$parts"
			echo "# the guests' kernel arguments:$kargs"
			echo "commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
		} >"$rdir/run.txt"
		say "deterministic run; to repeat it exactly: testbed.sh replay $rdir"
	fi
	trap - INT TERM EXIT
	say "up in $((SECONDS - start)) s; logs in $dir"
}

cmd_exec() {
	[ $# -ge 2 ] || die "usage: exec A|B CMD..."
	local v
	v=$(vm_name "$1")
	shift
	alive "$dir/$v.qemu.pid" || die "VM $v is not running"
	if [ -e "$dir/deterministic" ]; then
		det_exec "$v" "$*"
		return
	fi
	ODL_CTL="$dir/$v.ctl" ODL_TIMEOUT="${ODL_VM_EXEC_TIMEOUT:-60}" python3 - "$*" <<'PY'
import os, re, socket, sys, time
cmd = sys.argv[1]
if "\n" in cmd:
    sys.exit("odl: vm: exec: the command must be one line")
deadline = time.monotonic() + float(os.environ["ODL_TIMEOUT"])
# The guest answers in order; an earlier exec that timed out may still have
# its command running there: its output and mark come first and are dropped.
ident = f"{os.getpid()}.{time.monotonic_ns()}".encode()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["ODL_CTL"])
s.sendall(ident + b" " + cmd.encode() + b"\n")
buf = b""
# Whole lines only: a mark split from its newline would leave the newline
# at the head of the next answer.
done = re.compile(rb"@@ODL-DONE (\S+) (\d+)@@\n")
while True:
    left = deadline - time.monotonic()
    if left <= 0:
        sys.stdout.buffer.write(buf)
        sys.exit("odl: vm: exec: timed out")
    s.settimeout(left)
    try:
        chunk = s.recv(65536)
    except socket.timeout:
        continue
    if not chunk:
        sys.exit("odl: vm: exec: the VM closed the channel")
    buf += chunk
    m = done.search(buf)
    while m and m.group(1) != ident:
        buf = buf[m.end():]  # an earlier command's answer
        m = done.search(buf)
    if m:
        sys.stdout.buffer.write(buf[:m.start()])
        sys.stdout.flush()
        sys.exit(int(m.group(2)))
PY
}

# Deterministic mode: odl-linkd hands the command to the guest's agent
# (the device's mailbox) and lets the run go on until the agent says it is
# done, or ODL_VM_EXEC_TIMEOUT seconds of simulated time passed; the reply is
# what the agent wrote to $v.agent.log since.
det_exec() {
	local v=$1 cmd=$2 idx
	idx=$(vm_index "$v")
	alive "$dir/linkd.pid" || die "odl-linkd is not running"
	ODL_SOCK="$dir/linkd.ctl" ODL_LOG="$dir/$v.agent.log" ODL_TIMEOUT="${ODL_VM_EXEC_TIMEOUT:-60}" \
		python3 - "$idx" "$cmd" <<'PY'
import os, re, socket, sys
host, cmd = sys.argv[1], sys.argv[2]
if "\n" in cmd:
    sys.exit("odl: vm: exec: the command must be one line")
log = os.environ["ODL_LOG"]
start = os.path.getsize(log) if os.path.exists(log) else 0
timeout_s = float(os.environ["ODL_TIMEOUT"])
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
# Simulated seconds run slower than wall ones (a boot about 4x): the wall
# bound is generous, but a bound.
s.settimeout(60 + 20 * timeout_s)
s.connect(os.environ["ODL_SOCK"])
s.send(f"exec {host} {int(timeout_s * 1000)} {cmd}".encode())
try:
    reply = s.recv(65536).decode()
except socket.timeout:
    sys.exit("odl: vm: exec: odl-linkd did not answer")
with open(log, "rb") as f:
    f.seek(start)
    out = f.read()
if not reply.startswith("ok"):
    sys.stdout.buffer.write(out)
    sys.exit("odl: vm: exec: " + (reply[7:] if reply.startswith("error: ") else reply or "odl-linkd closed the request"))
m = re.search(rb"@@ODL-DONE (\d+)@@\n?", out)
if not m:
    sys.stdout.buffer.write(out)
    sys.exit("odl: vm: exec: the agent's reply is incomplete")
sys.stdout.buffer.write(out[:m.start()])
sys.stdout.flush()
sys.exit(int(m.group(1)))
PY
}

cmd_console() {
	[ $# -ge 1 ] || die "usage: console A|B [--follow]"
	local v
	v=$(vm_name "$1")
	[ -f "$dir/$v.console.log" ] || die "no console log for VM $v"
	if [ "${2:-}" = --follow ]; then
		exec tail -n +1 -f "$dir/$v.console.log"
	fi
	cat "$dir/$v.console.log"
}

# Waits until VM $1's guest says it is ready, at most $2 seconds; else its
# last console lines and QEMU's log, and dies with "VM $1 $3".
await_ready() {
	local v=$1 secs=$2 what=$3
	wait_for "$dir/$v.console.log" "ODL-GUEST: ready" "$dir/$v.qemu.pid" "$secs" && return 0
	say "VM $v not ready within ${secs} s; last console lines:"
	tail -n 20 "$dir/$v.console.log" >&2 || true
	cat "$dir/$v.qemu.log" >&2 || true
	die "VM $v $what"
}

# Starts QEMU for VM $1 with the command line $2...; its pid in $v.qemu.pid.
start_qemu() {
	local v=$1
	shift
	TMPDIR=$dir setsid "$@" >"$dir/$v.qemu.log" 2>&1 </dev/null &
	echo $! >"$dir/$v.qemu.pid"
}

# A host reset: the VM is powered off (its QEMU killed, as a host that
# loses power) and started again with the same command line; odl-linkd sees
# the host leave and come back, the peer sees the link go down and up.
cmd_reset() {
	local v pid start=$SECONDS argv=() off=0
	v=$(vm_name "${1:-}")
	# A restarted QEMU starts at simulated time 0; the others have moved on.
	[ ! -e "$dir/deterministic" ] || die "reset: not in a deterministic run (the guest's clock would start again at 0)"
	if [ "${2:-}" = --off ]; then
		off=${3:-}
		[[ "$off" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v s="$off" 'BEGIN { exit !(s <= 3600) }' ||
			die "reset: --off takes seconds from 0 to 3600, not '$off'"
	elif [ $# -gt 1 ]; then
		die "usage: reset VM [--off SECONDS]"
	fi
	alive "$dir/$v.qemu.pid" || die "VM $v is not running"
	[ -f "$dir/$v.argv" ] || die "VM $v was started without a saved command line"
	pid=$(cat "$dir/$v.qemu.pid")
	kill -KILL "$pid"
	local i
	for i in $(seq 200); do pid_runs "$pid" || break; sleep 0.05; done
	! pid_runs "$pid" || die "VM $v's QEMU (pid $pid) did not exit on SIGKILL within 10 s"
	if [ "$off" != 0 ]; then
		say "VM $v off for $off s"
		sleep "$off"
	fi
	mapfile -d '' argv <"$dir/$v.argv"
	# QEMU truncates the console log: keep what the guest said before.
	cat "$dir/$v.console.log" >>"$dir/$v.console.before-reset.log" 2>/dev/null || true
	: >"$dir/$v.console.log"
	start_qemu "$v" "${argv[@]}"
	await_ready "$v" "${ODL_VM_RESET_TIMEOUT:-300}" "did not come back after the reset"
	say "VM $v reset: ready again in $((SECONDS - start)) s"
}

cmd_kill() {
	local v
	v=$(vm_name "${1:-}")
	alive "$dir/$v.qemu.pid" || die "VM $v is not running"
	kill -KILL "$(cat "$dir/$v.qemu.pid")"
	rm -f "$dir/$v.qemu.pid"
	say "VM $v killed"
}

# One command on odl-linkd's control socket; prints the reply, fails
# unless it is "ok ..." (replies such as "fault status" can be long).
linkd_ctl() {
	alive "$dir/linkd.pid" || die "odl-linkd is not running"
	python3 - "$dir/linkd.ctl" "$*" <<'PY'
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
# "advance" in a deterministic run answers once the run got there.
s.settimeout(float(os.environ.get("ODL_CTL_TIMEOUT", "5")))
s.connect(sys.argv[1])
s.send(sys.argv[2].encode())
reply = s.recv(65536).decode()
print(reply)
sys.exit(0 if reply.startswith("ok") else 1)
PY
}

# replay DIR [--force]: `up` again with the recorded options, command file
# and odl-linkd options (plus ODL_LINKD_ARGS, e.g. its own --record), once
# the parts are checked to be the same bytes.
cmd_replay() {
	local rdir=${1:-} force=0 line args=() linkd_args="" saw_cmd=0
	[ -n "$rdir" ] || die "usage: replay DIR [--force] (DIR: a deterministic run's replay folder)"
	[ "${2:-}" = --force ] && force=1
	[ $# -le 2 ] && { [ $# -lt 2 ] || [ "$force" = 1 ]; } || die "usage: replay DIR [--force]"
	[ -f "$rdir/run.txt" ] || die "replay: $rdir/run.txt not found (up --deterministic writes it to \$ODL_VM_DIR/replay)"
	[ "$(head -n1 "$rdir/run.txt")" = "odl-deterministic-run 1" ] || die "replay: $rdir/run.txt is not a deterministic run's record"
	while IFS= read -r line; do
		case "$line" in
		"arg cmd") args+=("$rdir/cmd"); saw_cmd=1 ;;
		"arg "*) args+=("${line#arg }") ;;
		"env ODL_LINKD_ARGS="*) linkd_args=${line#env ODL_LINKD_ARGS=} ;;
		esac
	done <"$rdir/run.txt"
	[[ " ${args[*]} " == *" --deterministic "* ]] || die "replay: $rdir/run.txt is not of a deterministic run"
	[ "$saw_cmd" = 0 ] || [ -f "$rdir/cmd" ] || die "replay: the run had a command file; $rdir/cmd is missing"
	say "replaying the deterministic run of $rdir"
	ODL_VM_REPLAY_FILE="$rdir/run.txt" ODL_VM_REPLAY_FORCE=$force ODL_LINKD_ARGS="$linkd_args ${ODL_LINKD_ARGS:-}" \
		cmd_up "${args[@]}"
}

cmd_cable() {
	local usage="usage: cable [N] plug|unplug|retrain|degrade GEN LANES|ber RATE (N: the cable, default 0)" out
	local which=""
	if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
		which="$1 "
		shift
	fi
	case "${1:-}" in
	plug | unplug | retrain) [ $# = 1 ] || die "$usage" ;;
	degrade) [ $# = 3 ] || die "$usage" ;;
	ber) [ $# = 2 ] || die "$usage" ;;
	*) die "$usage" ;;
	esac
	# Checked here too: linkd_ctl's own die runs in the $( ) below, which
	# would add a second line with an empty reason.
	alive "$dir/linkd.pid" || die "odl-linkd is not running"
	out=$(linkd_ctl "cable $which$*") || die "cable $which$*: ${out#error: }"
	case "$1" in
	plug | unplug) say "cable ${which}${1}ged" ;;
	*) say "cable $which: $*" ;;
	esac
}

cmd_status() {
	local v rc=0
	alive "$dir/linkd.pid" && say "odl-linkd running" || { say "odl-linkd not running"; rc=1; }
	for v in "${vms[@]}"; do
		alive "$dir/$v.qemu.pid" && say "VM $v running" || { say "VM $v not running"; rc=1; }
	done
	return $rc
}

case "${1:-}" in
up) shift; cmd_up "$@" ;;
down) cmd_down ;;
exec) shift; cmd_exec "$@" ;;
console) shift; cmd_console "$@" ;;
kill) shift; cmd_kill "$@" ;;
reset) shift; cmd_reset "$@" ;;
replay) shift; cmd_replay "$@" ;;
cable) shift; cmd_cable "$@" ;;
ctl) shift; [ $# -ge 1 ] || die "usage: ctl CMD..."; linkd_ctl "$@" ;;
status) cmd_status ;;
*) die "usage: testbed.sh up|down|replay DIR|exec VM CMD|console VM|kill VM|reset VM|cable [N] plug|unplug|retrain|degrade G L|ber R|ctl CMD|status" ;;
esac
