# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced by the HIL tests. odl_ssh_left lists (pid, command) the SSH
# processes that odl started (ControlPath under /tmp/odl-hil-) and left
# running, counting only those started under this test: their environment
# carries the tag exported here, so another test's odl running beside this
# one is not blamed on it.
export ODL_TEST_TAG="hil.$$.$RANDOM"
odl_ssh_left() {
	local p
	for p in $(pgrep -f "ssh .*ControlPath=/tmp/odl-hil-"); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "ODL_TEST_TAG=$ODL_TEST_TAG" &&
			ps -o pid=,args= -p "$p"
	done
	return 0
}
