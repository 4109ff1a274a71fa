//go:build windows

package childproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// These tests run on Windows, and in CI under Wine (.ci/wine-exec).

// helperEnv makes the test binary act as a helper (see TestMain): args
// prints its arguments as JSON; sleep waits for ever; spawn starts a
// sleeping copy of itself, prints its pid and waits; daemon starts spawn
// through Start, prints "SERVER GRANDCHILD" and waits, as a daemon holding
// one node.
const helperEnv = "NERVE_CHILDPROC_WINDOWS"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "args":
		json.NewEncoder(os.Stdout).Encode(os.Args[1:])
		return
	case "spawn":
		exe, _ := os.Executable()
		c := exec.Command(exe)
		c.Env = helperEnvFor("sleep")
		if err := c.Start(); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(c.Process.Pid)
	case "daemon":
		exe, _ := os.Executable()
		p, err := Start([]string{exe}, helperEnvFor("spawn"), "", nil)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		line, err := bufio.NewReader(p.Stdout).ReadString('\n')
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(p.Pid(), strings.TrimSpace(line))
	}
	testutil.Hang()
}

// programEnv names the program the shims run.
const programEnv = "NERVE_TEST_PROGRAM"

// helperEnvFor is this process's environment with the helper's mode set,
// and this test binary as the program the shims run.
func helperEnvFor(mode string) []string {
	exe, _ := os.Executable()
	return append(os.Environ(), helperEnv+"="+mode, programEnv+"="+exe)
}

// readLine reads a line of r, failing the test if none comes in time.
func readLine(t *testing.T, r *os.File) string {
	t.Helper()
	ch := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		ch <- strings.TrimSpace(line)
	}()
	select {
	case line := <-ch:
		return line
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for the child's line")
		return ""
	}
}

// write writes a file of body, making its folder.
func write(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWindowsLookPath(t *testing.T) {
	dir := testutil.TempDir(t)
	bin := filepath.Join(dir, "bin dir")
	other := filepath.Join(dir, "other")
	// npm puts three files beside node.exe for npx: a sh script, a batch
	// file and a PowerShell script.
	write(t, filepath.Join(bin, "npx"), "#!/bin/sh\n")
	npx := write(t, filepath.Join(bin, "npx.cmd"), "@echo off\r\n")
	write(t, filepath.Join(bin, "npx.ps1"), "\r\n")
	tool := write(t, filepath.Join(bin, "tool.exe"), "MZ")
	script := write(t, filepath.Join(bin, "script.js"), "\r\n")
	onlyJS := write(t, filepath.Join(other, "onlyjs.js"), "\r\n")
	later := write(t, filepath.Join(other, "later.bat"), "\r\n")
	if err := os.Mkdir(filepath.Join(bin, "folder.exe"), 0o755); err != nil {
		t.Fatal(err)
	}
	allExt := ".COM;.EXE;.BAT;.CMD;.VBS;.JS"
	env := []string{"PATH=C:\\nowhere", "Path=" + bin + ";;" + other, "PATHEXT=" + allExt}

	tests := []struct {
		name, file string
		env        []string
		want       string
		reason     Reason
		msg        string // in the error
	}{
		{"npx is npx.cmd", "npx", env, npx, 0, ""},
		{"upper case", "NPX", env, filepath.Join(bin, "NPX.cmd"), 0, ""},
		{"an extension given", "npx.cmd", env, npx, 0, ""},
		{"a program", "tool", env, tool, 0, ""},
		{"a later folder", "later", env, later, 0, ""},
		{"PATHEXT without .bat", "later", []string{"PATH=" + other, "PATHEXT=.EXE"}, "", NotFound, "not found on PATH"},
		{"a script by its association only", "onlyjs", env, "", NotExecutable, "is not a program Windows starts"},
		{"a script named in full", "script.js", env, "", NotExecutable, "node " + script},
		{"a folder", "folder.exe", env, "", NotFound, "try `where folder.exe`"},
		{"a path without its extension", filepath.Join(bin, "npx"), env, npx, 0, ""},
		{"a path to a program", tool, env, tool, 0, ""},
		{"a path to a folder", bin, env, "", IsDir, "is a folder"},
		{"a path to nothing", filepath.Join(dir, "nothing"), env, "", NotFound, "check the path"},
		{"a path to a script", onlyJS, env, "", NotExecutable, "node " + onlyJS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LookPath(tt.file, tt.env)
			if tt.reason == 0 {
				if err != nil || !strings.EqualFold(got, tt.want) {
					t.Errorf("LookPath(%q) = %q, %v; want %q", tt.file, got, err, tt.want)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Reason != tt.reason || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("LookPath(%q) = %q, %v; want reason %d and %q", tt.file, got, err, tt.reason, tt.msg)
			}
		})
	}
}

func TestWindowsBatchLine(t *testing.T) {
	const script = `C:\Program Files (x86)\nodejs\npx.cmd`
	const head = `cmd.exe /d /e:on /v:off /s /c ""` + script + `"`
	tests := []struct {
		args []string
		want string // after head, before the closing quote
	}{
		{nil, ``},
		{[]string{"-y", "@scope/pkg@1.2.3", `C:\Users\me\dir`, "--port=80"}, ` -y @scope/pkg@1.2.3 C:\Users\me\dir "--port=80"`},
		{[]string{""}, ` ""`},
		{[]string{"a b", "a\tb"}, ` "a b" "a	b"`},
		{[]string{"&calc", "a|b", "a<b", "a>b", "(a)", "a^b", "a!b"}, ` "&calc" "a|b" "a<b" "a>b" "(a)" "a^b" "a!b"`},
		{[]string{"a,b", "a;b", "a=b", "a\u00a0b"}, ` "a,b" "a;b" "a=b" "a` + "\u00a0" + `b"`},
		{[]string{`C:\dir\`, `C:\my dir\`, `C:\my dir\\`, `a\b c`}, ` C:\dir\ "C:\my dir\\" "C:\my dir\\\\" "a\b c"`},
	}
	for _, tt := range tests {
		got, err := batchLine(script, tt.args)
		if want := head + tt.want + `"`; err != nil || got != want {
			t.Errorf("batchLine(%q)\n got %s (%v)\nwant %s", tt.args, got, err, want)
		}
	}
	for _, arg := range []string{"%PATH%", "100%", `a"b`, `"`, "a\nb", "a\rb", "a\x00b"} {
		_, err := batchLine(script, []string{"ok", arg})
		var e *Error
		if !errors.As(err, &e) || e.Reason != UnsafeArg || e.Arg != arg {
			t.Errorf("batchLine with %q: %v; want UnsafeArg naming it", arg, err)
		}
	}
	if _, err := batchLine(`C:\100%\x.cmd`, nil); err == nil {
		t.Error("a script path with % was taken")
	}
	if _, err := batchLine(script, []string{strings.Repeat("a", maxCmdLine)}); err == nil {
		t.Error("a line longer than cmd.exe runs was taken")
	}
}

// shims are batch files in the forms npm writes: its cmd-shim (every
// package's bin, through a label and CALL) and a plain one (npx.cmd).
// Each runs the program named by programEnv with %*.
var shims = map[string]string{
	"plain": "@ECHO OFF\r\nSETLOCAL\r\n\"%" + programEnv + "%\" %*\r\n",
	"cmd-shim": "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n" +
		"SET \"_prog=%" + programEnv + "%\"\r\n\"%_prog%\" %*\r\n",
}

// TestWindowsBatchArgs passes every argument of up to two characters of
// an alphabet holding cmd.exe's syntax, separators, backslashes and
// quotes, and a list of attacks, through a real cmd.exe and a batch file
// in a folder whose name needs quoting, to a program that prints what it
// got: each arrives as it was given or is refused, and nothing runs.
func TestWindowsBatchArgs(t *testing.T) {
	const alphabet = "a \t\\\"%!^&|<>(),;=@*?~'`"
	args := []string{""}
	for _, a := range alphabet {
		args = append(args, string(a))
		for _, b := range alphabet {
			args = append(args, string(a)+string(b))
		}
	}
	canary := filepath.Join(testutil.TempDir(t), "ran")
	args = append(args,
		"&echo x>"+canary, `"&echo x>`+canary+`&"`, "|echo x>"+canary, "^&echo", `\"&echo x>`+canary,
		`C:\Program Files\`, `C:\Program Files\\`, `a\\b\\ c\`, "ünïcødé", "a\u00a0b", "--flag=a,b;c",
		"!PATH!", "^^", "((a))", `a\"b`, "x\"\"", strings.Repeat("\\", 5)+"x", `%`, "%%", "a%PATH%",
	)
	dir := filepath.Join(testutil.TempDir(t), "bin dir (x86)")
	env := helperEnvFor("args")
	for name, body := range shims {
		t.Run(name, func(t *testing.T) {
			shim := write(t, filepath.Join(dir, name+".cmd"), body)
			defer func() {
				if _, err := os.Stat(canary); err == nil {
					t.Errorf("an argument ran a command: %s exists", canary)
				}
			}()
			passed, refused := 0, 0
			args := args
			for len(args) > 0 {
				// As many arguments as fit on one cmd.exe line.
				var chunk []string
				n := len(shim) + 64
				for len(args) > 0 && n+len(args[0])+3 < maxCmdLine {
					n += len(args[0]) + 3
					if unsafeIn(args[0]) != "" {
						p, err := Start([]string{shim, args[0]}, env, "", nil)
						var e *Error
						if err == nil || !errors.As(err, &e) || e.Reason != UnsafeArg {
							if p != nil {
								p.Stop(t.Context())
							}
							t.Errorf("Start with %q: %v; want UnsafeArg", args[0], err)
						}
						refused++
					} else {
						chunk = append(chunk, args[0])
					}
					args = args[1:]
				}
				p, err := Start(append([]string{shim}, chunk...), env, "", nil)
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				var got []string
				line := readLine(t, p.Stdout)
				p.Stop(t.Context())
				if err := json.Unmarshal([]byte(line), &got); err != nil {
					t.Fatalf("the helper printed %q (%v); stderr: %s", line, err, p.StderrTail(10))
				}
				if len(got) != len(chunk) {
					t.Fatalf("sent %d arguments, got %d:\nsent %q\n got %q", len(chunk), len(got), chunk, got)
				}
				for i := range chunk {
					if got[i] != chunk[i] {
						t.Errorf("argument %q arrived as %q", chunk[i], got[i])
					}
				}
				passed += len(chunk)
			}
			t.Logf("%d arguments passed unchanged, %d refused", passed, refused)
		})
	}
}

func TestWindowsUnsafeArgMessage(t *testing.T) {
	shim := write(t, filepath.Join(testutil.TempDir(t), "npx.cmd"), "@echo off\r\n")
	_, err := Start([]string{"npx", "-y", "pkg", "%USERPROFILE%"}, []string{"PATH=" + filepath.Dir(shim)}, "", nil)
	want := `argument "%USERPROFILE%" cannot be passed to ` + shim + ` safely: it is a batch file, which Windows runs through cmd.exe, and cmd.exe would read the "%" in it`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v; want %q", err, want)
	}
}

// alive reports whether pid is a process that has not exited.
func alive(pid int) bool { return testutil.ProcessAlive(pid) }

// TestWindowsStopEndsTheJob: what a child starts ends with it at Stop,
// started directly or through a batch file (cmd.exe, then the program,
// then its child).
func TestWindowsStopEndsTheJob(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shim := write(t, filepath.Join(testutil.TempDir(t), "spawn.cmd"), shims["plain"])
	for name, argv := range map[string][]string{"program": {exe}, "batch file": {shim}} {
		t.Run(name, func(t *testing.T) {
			p, err := Start(argv, helperEnvFor("spawn"), "", &Options{StopGrace: 10 * time.Millisecond, TermGrace: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			grandchild, err := strconv.Atoi(readLine(t, p.Stdout))
			if err != nil || !alive(grandchild) {
				t.Fatalf("no live grandchild: %d, %v", grandchild, err)
			}
			p.Stop(t.Context())
			if p.ExitState() == nil {
				t.Error("Stop returned before the child was reaped")
			}
			testutil.WaitFor(t, 10*time.Second, func() bool { return !alive(grandchild) }, "the grandchild to end with its job")
		})
	}
}

// TestWindowsJobEndsWithTheDaemon: a daemon that dies without stopping
// its child (killed) takes the child and what it started with it, as
// the lifeline does on Unix.
func TestWindowsJobEndsWithTheDaemon(t *testing.T) {
	cmd, line, err := testutil.StartHelper(t, helperEnv+"=daemon")
	if err != nil {
		t.Fatalf("helper: %q, %v", line, err)
	}
	var server, grandchild int
	if _, err := fmt.Sscan(line, &server, &grandchild); err != nil {
		t.Fatalf("helper said %q: %v", line, err)
	}
	if !alive(server) || !alive(grandchild) {
		t.Fatalf("server %d or grandchild %d is not running", server, grandchild)
	}
	cmd.Process.Kill()
	cmd.Wait()
	testutil.WaitFor(t, 10*time.Second, func() bool { return !alive(server) && !alive(grandchild) }, "the daemon's child and grandchild to end with it")
}
