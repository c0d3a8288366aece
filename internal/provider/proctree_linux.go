package provider

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// BecomeSubreaper makes the calling process the reaper of its orphaned
// descendants (PR_SET_CHILD_SUBREAPER): a process a host started and left
// behind, even in a session of its own (setsid) and after its parent
// exited, is adopted by the adapter instead of init, so the adapter still
// finds and stops it when the task ends. Call it once, before the first
// task, in a process whose only children are the hosts it runs.
func BecomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return os.NewSyscallError("prctl(PR_SET_CHILD_SUBREAPER)", errno)
	}
	subreaper.Store(true)
	return nil
}

// procEntry is one process of the process table.
type procEntry struct {
	ppid, pgid int
	zombie     bool
}

// processTable reads every process's parent, group and state from /proc.
func processTable() map[int]procEntry {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	table := make(map[int]procEntry, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok {
			table[pid] = p
		}
	}
	return table
}

// readStat parses /proc/<pid>/stat: the state, parent and group follow the
// command name, which is in parentheses and may itself hold any character.
func readStat(pid int) (procEntry, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procEntry{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return procEntry{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return procEntry{}, false
	}
	return procEntry{ppid: ppid, pgid: pgid, zombie: f[0] == "Z"}, true
}

// hostTree adds to owned every live process that belongs to the host pid:
// its descendants, the descendants of processes already owned, and, when
// this process is a subreaper, the orphans it adopted (children that are
// not in its own process group and are not a running host) with theirs.
// It drops owned processes that are gone, reaps adopted ones that have
// exited, and returns how many owned processes still run.
func hostTree(pid int, owned map[int]bool) int {
	table := processTable()
	self, group := os.Getpid(), syscall.Getpgrp()
	roots := map[int]bool{}
	if p, ok := table[pid]; ok && p.ppid == self {
		roots[pid] = true
	}
	for p := range owned {
		if _, ok := table[p]; ok {
			roots[p] = true
		}
	}
	if subreaper.Load() {
		for p, e := range table {
			if e.ppid == self && e.pgid != group && !runningHost(p) {
				roots[p] = true
			}
		}
	}
	children := map[int][]int{}
	for p, e := range table {
		children[e.ppid] = append(children[e.ppid], p)
	}
	for p := range owned {
		if _, ok := table[p]; !ok {
			delete(owned, p)
		}
	}
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			if !owned[c] {
				owned[c] = true
				walk(c)
			}
		}
	}
	for r := range roots {
		if r != pid {
			owned[r] = true
		}
		walk(r)
	}
	alive := 0
	for p := range owned {
		e := table[p]
		if !e.zombie {
			alive++
			continue
		}
		if e.ppid == self && !runningHost(p) {
			// An adopted orphan that exited: collect its status, which
			// nobody else will.
			var ws syscall.WaitStatus
			if wpid, _ := syscall.Wait4(p, &ws, syscall.WNOHANG, nil); wpid == p {
				delete(owned, p)
			}
		}
	}
	return alive
}

// signalOwned sends sig to every owned process.
func signalOwned(owned map[int]bool, sig syscall.Signal) {
	for p := range owned {
		_ = syscall.Kill(p, sig)
	}
}
