//go:build linux

package testutil

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procStat is the part of /proc/PID/stat that the orphan checks need.
type procStat struct {
	pid, ppid, pgrp int
	state           byte
}

// readStat parses /proc/PID/stat. The command name is parenthesised and may
// itself contain spaces and parentheses, so the fields after it are found
// from the last ')'.
func readStat(pid int) (procStat, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, false
	}
	s := string(data)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return procStat{}, false
	}
	fields := strings.Fields(s[end+1:])
	// fields: state ppid pgrp ...
	if len(fields) < 3 || len(fields[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(fields[1])
	pgrp, err2 := strconv.Atoi(fields[2])
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp, state: fields[0][0]}, true
}

// allStats returns the stat of every process readable in /proc. Processes
// that exit while it scans are left out.
func allStats() []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var stats []procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			stats = append(stats, st)
		}
	}
	return stats
}

// live reports whether a process state is that of a running process: a
// zombie (Z) or dead (X) process has exited and only awaits reaping.
func live(state byte) bool {
	return state != 'Z' && state != 'X'
}

// ProcessAlive reports whether pid names a process that has not exited.
// A zombie counts as exited.
func ProcessAlive(pid int) bool {
	st, ok := readStat(pid)
	return ok && live(st.state)
}

// ChildrenOf returns the pids of the live direct children of pid.
func ChildrenOf(pid int) []int {
	var kids []int
	for _, st := range allStats() {
		if st.ppid == pid && live(st.state) {
			kids = append(kids, st.pid)
		}
	}
	return kids
}

// ProcessGroupAlive reports whether any live process is in process group
// pgid. Use it to check that stopping a node killed the whole group,
// grandchildren included.
func ProcessGroupAlive(pgid int) bool {
	for _, st := range allStats() {
		if st.pgrp == pgid && live(st.state) {
			return true
		}
	}
	return false
}
