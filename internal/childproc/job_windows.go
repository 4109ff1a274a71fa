//go:build windows

package childproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// sysProcAttr starts the child without a console window of its own (a
// daemon has no console, and Windows would open one for every console
// program it starts) and, for a batch file, with the command line made by
// commandLine. Windows has no sessions or process groups to signal as Unix
// does: the child's job object holds what it starts.
func sysProcAttr(_ bool, line string) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CmdLine: line, CreationFlags: windows.CREATE_NO_WINDOW}
}

// terminateGroup has no gentle form on Windows: Stop goes straight to
// killGroup after its grace period.
func terminateGroup(pid int) {}

// killGroup ends the child itself; KillAll ends its job.
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
		p.Release()
	}
}

// KillAll ends everything the child started: its job object, every
// process of which Windows ends at once, and the child itself while it
// runs (it is the only one to end where it has no job). Windows has no
// process groups, and a process cannot leave a job that does not allow
// it, so extraGroups has nothing to add here.
func (p *Proc) KillAll(extraGroups ...int) {
	p.cg.kill()
	select {
	case <-p.exited:
		// Reaped: Windows may have given its pid to another process.
	default:
		killGroup(p.pid)
	}
}

// AdoptOrphans does nothing on Windows: a child's job object holds what it
// starts, and nothing is handed to the daemon to reap.
func AdoptOrphans() (release func()) { return func() {} }

// fileLinks: children are not traced by their files here.
func fileLinks(...*os.File) map[string]bool { return nil }

// Containment says how this process's children are contained.
func Containment() string { return "a job object per child" }

// SweepStale does nothing here: a job dies with the last handle to it,
// which a dead daemon no longer holds.
func SweepStale(string) error { return nil }

// cgroup is, on Windows, the child's job object, made with
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE and no breakaway: every process the
// child starts is in it and cannot leave it, Stop ends them all
// (TerminateJobObject), and when the daemon exits, however it exits,
// Windows closes its handle to the job and so ends them: the lifeline of
// Unix, kept by the system. The child starts suspended and resumes only
// once it is in the job, so it cannot start a process outside.
type cgroup struct {
	// mu guards job, closed by remove while kill may run.
	mu  sync.Mutex
	job windows.Handle
}

// newCgroup makes the job for one child, or returns nil (the child runs
// without one) when Windows refuses.
func newCgroup() *cgroup {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil
	}
	return &cgroup{job: job}
}

// Dir is a cgroup's folder on Linux; a job has none.
func (g *cgroup) Dir() string { return "" }

// kill ends every process of the job.
func (g *cgroup) kill() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.job != 0 {
		windows.TerminateJobObject(g.job, 1)
	}
}

// remove closes the job, which ends what is left in it.
func (g *cgroup) remove() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.job == 0 {
		return nil
	}
	err := windows.CloseHandle(g.job)
	g.job = 0
	return err
}

// start starts the command mk makes, suspended, puts it in the job,
// resumes it, and reaps it on a goroutine of its own. Without a job the
// child just starts.
func (g *cgroup) start(mk func() *exec.Cmd, reap func(*exec.Cmd)) (*exec.Cmd, error) {
	cmd := mk()
	if g != nil {
		cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED
	}
	if err := cmd.Start(); err != nil {
		g.remove()
		return cmd, err
	}
	if g != nil {
		if err := g.enter(cmd.Process.Pid); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			g.remove()
			return cmd, err
		}
	}
	go reap(cmd)
	return cmd, nil
}

// enter puts the suspended process pid in the job and resumes it.
func (g *cgroup) enter(pid int) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return fmt.Errorf("opening the child to put it in a job object: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(g.job, h); err != nil {
		return fmt.Errorf("putting the child in a job object: %w", err)
	}
	return resume(pid)
}

// resume resumes the threads of process pid, which was started suspended.
// os/exec keeps no handle to the child's first thread, so it is found in a
// snapshot of the system's threads (the documented way; NtResumeProcess is
// not).
func resume(pid int) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("listing the child's threads to resume it: %w", err)
	}
	defer windows.CloseHandle(snap)
	n := 0
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != uint32(pid) {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("opening the child's thread to resume it: %w", err)
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("resuming the child: %w", err)
		}
		n++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("listing the child's threads to resume it: %w", err)
	}
	if n == 0 {
		return errors.New("resuming the child: it has no thread")
	}
	return nil
}
