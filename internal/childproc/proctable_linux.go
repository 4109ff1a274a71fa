package childproc

import (
	"bytes"
	"os"
	"strconv"
)

// ProcessTable lists the live processes from /proc.
func ProcessTable() ([]ProcInfo, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	procs := make([]ProcInfo, 0, len(names))
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
func readStat(pid int, buf []byte) (ProcInfo, bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcInfo{}, false
	}
	n, _ := f.Read(buf)
	f.Close()
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ProcInfo{}, false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 3 {
		return ProcInfo{}, false
	}
	ppid, err1 := strconv.Atoi(string(fields[1]))
	pgid, err2 := strconv.Atoi(string(fields[2]))
	if err1 != nil || err2 != nil {
		return ProcInfo{}, false
	}
	return ProcInfo{Pid: pid, Ppid: ppid, Pgid: pgid, Zombie: fields[0][0] == 'Z' || fields[0][0] == 'X'}, true
}

// MarkerHolders returns the processes whose environment holds marker (an
// exact NAME=VALUE entry): a child's descendants that left its process
// tree (double fork, setsid) still carry the marker Start gave the child.
func MarkerHolders(procs []ProcInfo, marker string) []ProcInfo {
	if marker == "" {
		return nil
	}
	needle := []byte(marker)
	var out []ProcInfo
	for _, p := range procs {
		if p.Zombie {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/environ")
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

// LiveCwd returns a process's current directory, cheaply ("" when unknown).
func LiveCwd(pid int) string {
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if err != nil {
		return ""
	}
	return cwd
}
