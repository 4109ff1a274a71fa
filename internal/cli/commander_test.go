package cli

import "testing"

func TestReplEnvSamplingNode(t *testing.T) {
	env := &Env{Getenv: func(k string) string { return map[string]string{samplingNodeEnv: "from-env", "HOME": "/h"}[k] }}
	inv, err := Parse(Tree(), []string{"--sampling-node", "gpt"})
	if err != nil {
		t.Fatal(err)
	}
	e := replEnv(env, inv)
	if got := e.getenv(samplingNodeEnv); got != "gpt" {
		t.Errorf("--sampling-node gpt: the REPL uses %q", got)
	}
	if got := e.getenv("HOME"); got != "/h" {
		t.Errorf("other variables changed: HOME=%q", got)
	}
	inv, _ = Parse(Tree(), nil)
	if got := replEnv(env, inv).getenv(samplingNodeEnv); got != "from-env" {
		t.Errorf("without the flag the REPL uses %q; want $%s", got, samplingNodeEnv)
	}
}
