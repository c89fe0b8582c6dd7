# SPDX-License-Identifier: MIT
# Guest side of vm_deterministic (tests/vm/deterministic_test.sh): runs from
# /odl/cmd in both guests. Everything here must depend on nothing outside
# the run: no `odl vm exec`, no host clock. It ends by powering the guest
# off, so that the run (and odl-linkd's record) ends at the same simulated
# instant every time.
host=$(sed -n 's/.*odl\.host=\([A-Za-z0-9]*\).*/\1/p' /proc/cmdline)
work() {
	for i in $(seq 200); do
		[ -e /sys/class/net/thunderbolt0 ] && break
		sleep 0.1
	done
	if [ "$host" = A ]; then
		ip addr add 10.99.0.1/24 dev thunderbolt0 && ip link set thunderbolt0 up
		ok=0
		for i in $(seq 30); do
			if ping -c 1 -W 1 10.99.0.2 >/dev/null 2>&1; then
				ok=1
				break
			fi
		done
		echo "ODL-DET: first reply after $i tries"
		ping -c 20 -i 0.05 10.99.0.2 | sed 's/^/ODL-DET: /'
		ping -c 5 -s 8000 -i 0.05 10.99.0.2 | sed 's/^/ODL-DET: /'
		echo "ODL-DET: done ok=$ok"
	else
		ip addr add 10.99.0.2/24 dev thunderbolt0 && ip link set thunderbolt0 up
		# A leaves first; B stops once it has seen its peer go.
		for i in $(seq 600); do
			[ -e /sys/bus/thunderbolt/devices/0-1 ] || break
			sleep 0.1
		done
		echo "ODL-DET: done, peer gone after $i polls"
	fi
	poweroff -f
}
work </dev/null >/dev/console 2>&1 &
