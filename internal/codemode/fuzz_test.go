package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fuzzLimits are small, so that every input ends quickly.
var fuzzLimits = Limits{Steps: 200_000, Time: 5 * time.Second, Bytes: 4 << 20, Calls: 20, Parallel: 4}

// FuzzRun: any source runs, or fails with an *Error, within the limits —
// never a panic, a hang or an answer that is not JSON.
func FuzzRun(f *testing.F) {
	for _, s := range []string{
		`result = e1.echo(text="hi")`,
		"r = e1.fail()\nresult = [is_error(r), r.error]",
		`parallel([(e1.echo, {"text": "a"}), ("e1.get-sum", {"a": 1, "b": 5})])`,
		`x = "a" * 1000000000`,
		"s = 'ab'\nfor i in range(40): s = s + s",
		"while True: pass",
		"load('x', 'y')",
		"d = {}\nd['k'] += [1]",
		"l = [1]\nl += l\nl.extend(l)\nresult = l[::-1]",
		`json.decode('{"a": [1, 2.5, "x", null, true]}')`,
		"def f(*a, **k): return (a, k)\nf(*[1, 2], **{'x': 3})",
		"'%s %d %r' % ('a', 1, [2])",
		"'{} {x}'.format(1, x=2)",
		"','.join(['a'] * 10).split(',')",
		"sorted({3: 1, 1: 2}.items(), key=lambda kv: kv[1])",
		"my_fs.stat(path='a')['size'] << 100",
		"str(tool('sh.bash', command='x'))",
		"[x for x in range(10) if x % 2] + list(zip('ab'.elems(), enumerate([1])))",
	} {
		f.Add(s)
	}
	tools := standardFake()
	f.Fuzz(func(t *testing.T, src string) {
		res, err := Run(context.Background(), src, &Options{Tools: tools, Limits: fuzzLimits})
		if res == nil {
			t.Fatal("Run returned no result")
		}
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("%q: an error that is not an *Error: %v", src, err)
		}
		if _, jerr := json.Marshal(ToolResult(res, err)); jerr != nil {
			t.Fatalf("%q: the answer is not JSON: %v", src, jerr)
		}
	})
}

// FuzzRunDeep: values nested far past every limit — built in a loop, read
// as JSON, shown, passed to a tool, returned — end with a limit named or
// a nesting refused, never a crash.
func FuzzRunDeep(f *testing.F) {
	f.Add(uint32(2000), uint8(0))
	f.Add(uint32(200000), uint8(3))
	f.Add(uint32(1001), uint8(5))
	tools := standardFake()
	shapes := []string{
		"t = []\nfor i in range(%d): t = [t]\nresult = str(t)",
		"t = ()\nfor i in range(%d): t = (t,)\nresult = {t: 1}[t]",
		"t = {}\nfor i in range(%d): t = {'k': t}\nresult = json.encode(t)",
		"t = []\nfor i in range(%d): t = [t]\nresult = e1.echo(text=t)",
		"n = %d\nresult = json.decode('[' * n + ']' * n)",
		"t = []\nfor i in range(%d): t = [t]\nresult = t",
		"t = []\nfor i in range(%d): t = [t]\nprint(t)",
		"t = []\nfor i in range(%d): t = [t]\nresult = '%%s' %% (t,)",
	}
	f.Fuzz(func(t *testing.T, depth uint32, shape uint8) {
		src := fmt.Sprintf(shapes[int(shape)%len(shapes)], depth%2_000_000)
		res, err := Run(context.Background(), src, &Options{Tools: tools, Limits: Limits{Steps: 20_000_000, Time: 20 * time.Second, Bytes: 16 << 20}})
		var e *Error
		switch {
		case err == nil:
		case !errors.As(err, &e):
			t.Fatalf("%q: an error that is not an *Error: %v", src, err)
		case e.Limit == "" && !strings.Contains(e.Msg, "nested more than") && !strings.Contains(e.Msg, "recursion depth"):
			t.Fatalf("%q: %v; want a limit named or the nesting refused", src, err)
		}
		if _, jerr := json.Marshal(ToolResult(res, err)); jerr != nil {
			t.Fatalf("%q: the answer is not JSON: %v", src, jerr)
		}
	})
}
