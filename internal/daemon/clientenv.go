package daemon

import (
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/nerve-dev/nerve/pkg/api"
)

// requestEnv is the client's environment a request carries
// (api.HeaderClientEnv), or nil.
func requestEnv(r *http.Request) []string {
	h := r.Header.Get(api.HeaderClientEnv)
	if h == "" {
		return nil
	}
	data, err := base64.StdEncoding.DecodeString(h)
	if err != nil {
		return nil
	}
	var env []string
	if json.Unmarshal(data, &env) != nil {
		return nil
	}
	return env
}
