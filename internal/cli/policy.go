package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/session"
)

// runSessionSetPolicy sets the session's call policy or its ask timeout
// (issue 32, item 4).
func runSessionSetPolicy(ctx context.Context, env *Env, inv *Invocation, key, value string) error {
	var pol session.Policy
	var timeout time.Duration
	switch key {
	case "policy":
		var err error
		if pol, err = session.ParsePolicy(value); err != nil {
			return usagef(inv, "%v", err)
		}
	default:
		var err error
		timeout, err = time.ParseDuration(value)
		if value == "0" {
			timeout, err = 0, nil
		}
		if err != nil || timeout < 0 {
			return usagef(inv, "ask-timeout %q: use a duration such as 30s or 5m (0: the default, 2m)", value)
		}
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	st, err := s.Settings(ctx)
	if err != nil {
		return err
	}
	if key == "policy" {
		st.Policy = pol.String()
	} else {
		st.AskTimeout = api.Duration(timeout)
	}
	if st, err = s.SetSettings(ctx, st); err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, st)
	}
	switch {
	case key == "ask-timeout":
		fmt.Fprintf(env.Stdout, "session %s: a call the policy asks about waits %s for a person, then is refused\n", s.Name(), askTimeout(st))
	case st.Policy == "":
		fmt.Fprintf(env.Stdout, "session %s: every call runs (no policy)\n", s.Name())
	default:
		fmt.Fprintf(env.Stdout, "session %s: agents' calls follow %s (the first rule that matches; no match runs); your own calls always run\n", s.Name(), st.Policy)
	}
	return nil
}

func askTimeout(st api.Settings) time.Duration {
	if st.AskTimeout > 0 {
		return time.Duration(st.AskTimeout)
	}
	return session.DefaultAskTimeout
}

// showPolicy adds the policy to `nerve session show`.
func showPolicy(env *Env, st api.Settings) {
	pol := st.Policy
	if pol == "" {
		pol = "none: every call runs"
	}
	fmt.Fprintf(env.Stdout, "policy  %s\nask-timeout  %s\n", pol, askTimeout(st))
}
