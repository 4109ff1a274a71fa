//go:build windows

package childproc

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf16"

	"golang.org/x/sys/windows"
)

// commandLine returns how Start runs path with argv. A program runs as it
// is: exe is path, and line "" leaves the quoting to os/exec, which follows
// the rules programs use to split their command line (CommandLineToArgvW).
// A batch file (.cmd, .bat: npx.cmd, every npm package's shim) can only
// run through cmd.exe, which reads its command line by rules of its own
// and expands %VAR% in it; os/exec leaves that to the caller (see
// exec.Command's doc), so exe is the system's cmd.exe and line the whole
// command line, built by batchLine.
func commandLine(path string, argv []string) (exe, line string, err error) {
	if !isBatch(path) {
		return path, "", nil
	}
	sys, err := windows.GetSystemDirectory()
	if err != nil {
		return "", "", &Error{Reason: StartFailed, Name: argv[0], Path: path, Err: fmt.Errorf("finding cmd.exe to run a batch file: %w", err)}
	}
	line, err = batchLine(path, argv[1:])
	if e, ok := err.(*Error); ok {
		e.Name = argv[0]
	}
	return filepath.Join(sys, "cmd.exe"), line, err
}

// maxCmdLine is the longest command line cmd.exe runs, in UTF-16 units.
const maxCmdLine = 8191

// batchLine returns the command line that has cmd.exe run the batch file
// script with args, each reaching the script (its %1…, %*) and the program
// the script passes %* to as exactly the argument given — or an *Error
// (UnsafeArg) for an argument that cannot, rather than a line in which
// cmd.exe might read part of an argument as a command.
//
//	cmd.exe /d /e:on /v:off /s /c ""SCRIPT" ARG…"
//
// /d skips the AutoRun commands of the registry, /e:on and /v:off fix the
// extensions on and delayed expansion (!VAR!) off whatever the registry
// says, and /s makes cmd.exe take off exactly the first and last quote
// of what follows /c and run the rest.
//
// cmd.exe reads the line twice: here, and where the script writes %*,
// which puts the arguments' text back into one of its lines. Both times a
// quote turns its quoting on or off, and outside quotes & | < > ( ) ^ are
// its syntax and space , ; = split arguments. So an argument made of
// anything but letters, digits and -_./\:@+#$*?~[]{}' is written in
// quotes, and its trailing backslashes doubled so that the program the
// script starts, which splits its command line by CommandLineToArgvW's
// rules, does not read the closing quote as a quote of the argument.
// What no quoting protects is refused: % (cmd.exe expands %VAR% inside
// quotes too), a quote (which would turn cmd.exe's quoting off in the
// middle of the argument) and line breaks and NUL (which end the line).
// This is the quoting of Rust's std::process::Command for batch files
// after CVE-2024-24576 ("BatBadBut"), less its %%cd:~,% trick: it refuses
// % instead.
//
// What it cannot control is a script that turns delayed expansion on
// itself (setlocal EnableDelayedExpansion), where a ! in an argument is
// read; npm's shims do not.
func batchLine(script string, args []string) (string, error) {
	if c := unsafeIn(script); c != "" {
		return "", &Error{Reason: UnsafeArg, Path: script, Arg: script, Char: c}
	}
	var b strings.Builder
	b.WriteString(`cmd.exe /d /e:on /v:off /s /c ""`)
	b.WriteString(script)
	b.WriteByte('"')
	for _, a := range args {
		if c := unsafeIn(a); c != "" {
			return "", &Error{Reason: UnsafeArg, Path: script, Arg: a, Char: c}
		}
		b.WriteByte(' ')
		if !needsQuotes(a) {
			b.WriteString(a)
			continue
		}
		b.WriteByte('"')
		b.WriteString(a)
		// Backslashes before the closing quote are doubled, so the program
		// reads them as backslashes and the quote as the end.
		for i := len(a) - 1; i >= 0 && a[i] == '\\'; i-- {
			b.WriteByte('\\')
		}
		b.WriteByte('"')
	}
	b.WriteByte('"')
	line := b.String()
	if n := len(utf16.Encode([]rune(line))); n > maxCmdLine {
		return "", &Error{Reason: StartFailed, Path: script, Err: fmt.Errorf("the command line is %d characters, more than the %d cmd.exe runs", n, maxCmdLine)}
	}
	return line, nil
}

// unsafeIn returns what in s no quoting keeps from cmd.exe ("" if none).
func unsafeIn(s string) string {
	if i := strings.IndexAny(s, "%\"\r\n\x00"); i >= 0 {
		return s[i : i+1]
	}
	return ""
}

// needsQuotes reports whether a must be quoted for cmd.exe: it is empty
// or has a character outside the plain set, which includes none of
// cmd.exe's syntax (& | < > ( ) ^ !) nor its separators (space, tab , ; =
// and the non-ASCII no-break space among others).
func needsQuotes(a string) bool {
	if a == "" {
		return true
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte(`-_./\:@+#$*?~[]{}'`, c) >= 0:
		default:
			return true
		}
	}
	return false
}
