# Shared by the fake agent hosts in this directory. A fake host prints what
# the real host prints for a task (its documented output format) and lets
# tests choose a behaviour with FAKE_MODE. These variables steer it:
#
#   FAKE_RECORD  directory where each start is recorded: argv.<pid>
#                (NUL-separated), env.<pid>, cwd.<pid>, stdin.<pid>, and the
#                pid appended to "calls" once those are written
#   FAKE_MODE    the behaviour; each host documents its own
#   FAKE_GATE    a file to wait for before finishing, so that a test can
#                watch the progress of a run that is still going
#   FAKE_OUTPUT  text to write to $A2A_OUTPUT_DIR/report.md
#   FAKE_SETSID  when set, the child that hang starts runs in a session of
#                its own (setsid), as the shell tools of real hosts do

record() {
	[ -n "$FAKE_RECORD" ] || { cat >/dev/null; return 0; }
	mkdir -p "$FAKE_RECORD"
	for a in "$@"; do printf '%s\000' "$a"; done >"$FAKE_RECORD/argv.$$"
	env >"$FAKE_RECORD/env.$$"
	pwd -P >"$FAKE_RECORD/cwd.$$"
	cat >"$FAKE_RECORD/stdin.$$"
	echo "$$" >>"$FAKE_RECORD/calls"
}

# arg_after NAME ARGS... prints the argument that follows NAME.
arg_after() {
	want=$1
	shift
	while [ $# -gt 0 ]; do
		if [ "$1" = "$want" ]; then
			printf '%s' "$2"
			return 0
		fi
		shift
	done
}

emit() { printf '%s\n' "$1"; }

# hang runs until stopped. SIGINT ends it like a real host that saves its
# state and exits, unless FAKE_IGNORE_INT is set: then only SIGKILL ends it.
hang() {
	if [ -n "$FAKE_IGNORE_INT" ]; then
		trap '' INT
	else
		trap 'echo SIGINT >"$FAKE_RECORD/sigint.$$"; exit 130' INT
	fi
	if [ -n "$FAKE_SETSID" ]; then
		setsid sleep 1000 &
	else
		sleep 1000 &
	fi
	echo $! >"$FAKE_RECORD/child.$$"
	while :; do wait; done
}

gate() {
	[ -n "$FAKE_GATE" ] || return 0
	while [ ! -e "$FAKE_GATE" ]; do
		[ -d "$(dirname "$FAKE_GATE")" ] || exit 1
		sleep 0.02
	done
}

outputs() {
	[ -n "$FAKE_OUTPUT" ] || return 0
	printf '%s\n' "$FAKE_OUTPUT" >"$A2A_OUTPUT_DIR/report.md"
}
