package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLayers keeps docs/design/architecture.md's table of layers true: every
// package of nerve has a row, imports only packages of a lower layer (no
// arrow up a layer, no two packages on one layer leaning on each other),
// and a row whose imports column is a plain list names exactly what the
// package imports of nerve's.
func TestLayers(t *testing.T) {
	doc, err := os.ReadFile("../../docs/design/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/nerve-dev/nerve/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"...").Output()
	if err != nil {
		t.Skipf("go list: %v", err) // a go command is needed to read the import graph
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		p := strings.TrimPrefix(f[0], mod)
		if strings.HasPrefix(p, "fixtures/") || strings.HasPrefix(p, "internal/testutil") {
			continue
		}
		var own []string
		for _, i := range f[1:] {
			if strings.HasPrefix(i, mod) && !strings.HasPrefix(i, mod+"internal/testutil") {
				own = append(own, strings.TrimPrefix(i, mod))
			}
		}
		imports[p] = own
	}

	row := regexp.MustCompile("(?m)^\\| (\\d+) \\| `([^`]+)`([^|]*)\\| ([^|]*) \\|")
	layer := map[string]int{}
	column := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		n, _ := strconv.Atoi(m[1])
		layer[m[2]], column[m[2]] = n, strings.TrimSpace(m[4])
		if strings.Contains(m[3], "(+ `provider`)") {
			layer[m[2]+"/provider"] = n // a part of the package above it
		}
	}
	within := func(p, i string) bool { return i == p+"/provider" || p == i+"/provider" }
	for p, own := range imports {
		lp, ok := layer[p]
		if !ok {
			t.Errorf("%s has no row in docs/design/architecture.md's table of layers", p)
			continue
		}
		for _, i := range own {
			if li, ok := layer[i]; ok && li >= lp && !within(p, i) {
				t.Errorf("%s (layer %d) imports %s (layer %d): an arrow that does not go down a layer", p, lp, i, li)
			}
		}
		col, ok := column[p]
		if !ok || (col != "—" && !regexp.MustCompile(`^[a-z0-9_, ]+$`).MatchString(col)) {
			continue // a row that describes its imports in words
		}
		var want []string
		for _, i := range append(own, imports[p+"/provider"]...) {
			if i != p && !within(p, i) {
				want = append(want, i[strings.LastIndexByte(i, '/')+1:])
			}
		}
		slices.Sort(want)
		want = slices.Compact(want)
		got := "—"
		if len(want) > 0 {
			got = strings.Join(want, ", ")
		}
		if got != col {
			t.Errorf("%s's row says it imports %q; it imports %q", p, col, got)
		}
	}
	for p := range column {
		if _, ok := imports[p]; !ok {
			t.Errorf("docs/design/architecture.md's table has a row for %s, which is no package", p)
		}
	}
}
