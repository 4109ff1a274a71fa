//go:build unix && !linux

package childproc

import (
	"bufio"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
)

// ProcessTable lists the live processes with ps(1); only interrupts and
// stops need it.
func ProcessTable() ([]ProcInfo, error) {
	out, err := exec.Command("ps", "-A", "-o", "pid=,ppid=,pgid=,stat=").Output()
	if err != nil {
		return nil, err
	}
	var procs []ProcInfo
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		ppid, err2 := strconv.Atoi(f[1])
		pgid, err3 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		procs = append(procs, ProcInfo{Pid: pid, Ppid: ppid, Pgid: pgid, Zombie: strings.HasPrefix(f[3], "Z")})
	}
	return procs, nil
}

// MarkerHolders cannot read other processes' environments here.
func MarkerHolders([]ProcInfo, string) []ProcInfo { return nil }

// LiveCwd is unknown here.
func LiveCwd(int) string { return "" }

// adoptedOf: there is no subreaper here.
func adoptedOf(*KillSet, []ProcInfo, map[string]bool) {}
