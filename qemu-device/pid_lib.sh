# SPDX-License-Identifier: MIT
# Whether a process runs, for testbed.sh and the tests that drive it.
# Sourced, not run.

# pid_runs PID: the process runs. One that has exited but is not reaped yet
# (a zombie: QEMU and odl-linkd are init's children, and some inits reap
# every few seconds) has let go of all it held, so it counts as ended, where
# kill -0 would say it runs. Anything but a number is no process (an empty
# pid would read /proc//stat, that is /proc/stat).
pid_runs() {
	local s
	[[ ${1:-} =~ ^[0-9]+$ ]] || return 1
	s=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$s" ] && [ "${s%% *}" != Z ]
}

# pidfile_runs FILE: the process named in FILE runs.
pidfile_runs() { [ -f "$1" ] && pid_runs "$(cat "$1" 2>/dev/null)"; }
