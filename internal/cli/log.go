package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/nerve-dev/nerve/internal/daemon"
)

func logCmd() *Command {
	return &Command{
		Name:    "log",
		Summary: "show the call log: every call with who made it, its node, tool, arguments, result and duration",
		Usage:   "log [-n N] [--follow]",
		Help: "Every call of every session is logged once, whoever made it: the caller column says who " +
			"(cli, repl, api, mcp:CLIENT for an MCP client of `nerve mcp serve` or the HTTP endpoint, " +
			"graph:GRAPH/STEP for a graph's step, llm:NODE for an llm node's agent). " +
			"The call log is a JSON-lines file in the state folder; --json prints its lines as they are.",
		Flags: []*Flag{
			{Name: "lines", Short: "n", Value: "N", Usage: "show the last N calls (default 20; 0 for all)"},
			{Name: "follow", Short: "f", Usage: "keep printing calls as they are made (Ctrl-C ends)"},
		},
		Local: true,
		Run:   runLog,
	}
}

// followPoll is how often --follow looks for new lines, like tail -f.
const followPoll = 200 * time.Millisecond

func runLog(ctx context.Context, env *Env, inv *Invocation) error {
	if err := notThroughSSH(env, inv); err != nil {
		return err // the call log is the daemon's machine's file
	}
	n := 20
	if v := inv.Flag("lines"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			return usagef(inv, "-n %q: use a number of lines, 0 for all", v)
		}
	}
	p, err := env.paths()
	if err != nil {
		return err
	}
	f, err := os.Open(p.CallLog)
	if errors.Is(err, os.ErrNotExist) && !inv.Bool("follow") {
		fmt.Fprintf(env.Stderr, "no calls logged yet (%s)\n", p.CallLog)
		return nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("opening the call log: %w", err)
	}
	var offset int64
	if f != nil {
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("reading the call log: %w", err)
		}
		offset = int64(len(data))
		lines := bytes.SplitAfter(data, []byte("\n"))
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		if n > 0 && len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		for _, l := range lines {
			printLogLine(env, l)
		}
	}
	if !inv.Bool("follow") {
		return nil
	}
	return followLog(ctx, env, p.CallLog, offset)
}

// followLog prints lines appended to path from offset on, starting over
// when the log is rotated (the file got shorter).
func followLog(ctx context.Context, env *Env, path string, offset int64) error {
	var partial []byte
	for {
		if fi, err := os.Stat(path); err == nil {
			if fi.Size() < offset {
				offset, partial = 0, nil
			}
			if fi.Size() > offset {
				f, err := os.Open(path)
				if err != nil {
					return err
				}
				if _, err := f.Seek(offset, io.SeekStart); err == nil {
					r := bufio.NewReader(f)
					for {
						l, err := r.ReadBytes('\n')
						offset += int64(len(l))
						if err != nil {
							partial = append(partial, l...)
							break
						}
						printLogLine(env, append(partial, l...))
						partial = nil
					}
				}
				f.Close()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
	}
}

func printLogLine(env *Env, line []byte) {
	if env.JSON {
		env.Stdout.Write(line)
		return
	}
	var r daemon.CallRecord
	if json.Unmarshal(line, &r) != nil {
		fmt.Fprintf(env.Stdout, "(unreadable line) %s", line)
		return
	}
	status := "ok"
	switch {
	case r.Error != "":
		status = "failed: " + firstLine(r.Error)
	case r.IsError:
		status = "isError"
	}
	args := string(r.Args)
	if args == "" {
		args = r.ArgsPreview
	}
	caller := "-" // a line written before callers were logged
	if r.Caller != nil {
		caller = r.Caller.String()
	}
	if p := r.Policy; p != nil {
		// What the call policy decided comes first: a refused call did not run.
		d := "policy " + p.Outcome
		if p.By != "" {
			d += " by " + p.By
		}
		if p.Rule != "" {
			d += " (" + p.Rule + ")"
		}
		status = d + ", " + status
	}
	fmt.Fprintf(env.Stdout, "%s %s %s @%s %s %s %.1fms %s", r.Time.Local().Format("2006-01-02 15:04:05"), caller, r.Session, r.Node, r.Tool, args, r.DurationMS, status)
	if r.Result != "" && r.Error == "" {
		fmt.Fprintf(env.Stdout, " → %s", firstLine(r.Result))
	}
	fmt.Fprintln(env.Stdout)
}
