package bash

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr starts the shell in its own session (and so its own process
// group) without a controlling terminal, killed with us: Pdeathsig covers a
// daemon that dies without running Stop. A new session matters when nerve
// runs in a terminal: a shell with job control (`set -m`) in a background
// process group of that terminal would be stopped by SIGTTOU/SIGTTIN.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// processTable lists the live processes from /proc.
func processTable() ([]procInfo, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	procs := make([]procInfo, 0, len(names))
	buf := make([]byte, 512)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		p, ok := readStat(pid, buf)
		if ok {
			procs = append(procs, p)
		}
	}
	return procs, nil
}

// readStat parses /proc/pid/stat: "pid (comm) state ppid pgrp ...". comm may
// hold spaces and parentheses, so fields are counted from the last ')'.
func readStat(pid int, buf []byte) (procInfo, bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	n, _ := f.Read(buf)
	f.Close()
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 3 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(string(fields[1]))
	pgid, err2 := strconv.Atoi(string(fields[2]))
	if err1 != nil || err2 != nil {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: ppid, pgid: pgid, zombie: fields[0][0] == 'Z' || fields[0][0] == 'X'}, true
}

// tokenHolders returns the processes whose environment holds the marker
// variable nerve gave the shell: descendants that escaped the process tree
// (double fork, setsid) still carry it.
func tokenHolders(procs []procInfo, envVar string) []procInfo {
	needle := []byte(envVar)
	var out []procInfo
	for _, p := range procs {
		if p.zombie {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/environ")
		if err != nil {
			continue // gone, or not ours to read
		}
		for rec := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(rec, needle) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// liveCwd returns the shell's current directory, cheaply.
func liveCwd(pid int) string {
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if err != nil {
		return ""
	}
	return cwd
}
