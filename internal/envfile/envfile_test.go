package envfile

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	es, err := Parse([]byte("# tokens\nexport A=1\nB = \"two words\\n\"\n\nD=x # note\nE='a b'\nF=\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"A", "1"}, {"B", "two words\n"}, {"D", "x"}, {"E", "a b"}, {"F", ""}}
	if !reflect.DeepEqual(es, want) {
		t.Errorf("Parse = %+v, want %+v", es, want)
	}
	if _, err := Parse([]byte("C='open\n")); err == nil {
		t.Error("Parse accepted an unclosed quote")
	}
	if _, err := Parse([]byte("ok=1\n1BAD=2\n")); err == nil || err.Error()[:6] != "line 2" {
		t.Errorf("a bad key: %v, want an error naming line 2", err)
	}
}

func TestSetUnsetKeepOtherLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "env")
	os.WriteFile(p, []byte("# my tokens\nA=1\n"), 0o644)
	if err := Set(p, "TOKEN", "s3cr3t value"); err != nil {
		t.Fatal(err)
	}
	if err := Set(p, "A", "2"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "# my tokens\nA=2\nTOKEN=\"s3cr3t value\"\n" {
		t.Errorf("file after Set:\n%s", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if ok, err := Unset(p, "A"); !ok || err != nil {
		t.Fatalf("Unset(A) = %v, %v", ok, err)
	}
	if ok, _ := Unset(p, "NOPE"); ok {
		t.Error("Unset(NOPE) found it")
	}
	env, _ := Environ(p)
	if !reflect.DeepEqual(env, []string{"TOKEN=s3cr3t value"}) {
		t.Errorf("Environ = %q", env)
	}
	if err := Set(p, "bad-key", "x"); err == nil {
		t.Error("Set accepted bad-key")
	}
}
