package mcpnode

import (
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/nerve-dev/nerve/internal/httpretry"
)

// StatusError is the error of a request a remote server (or a gateway in
// front of it) turned away after nerve's retries (internal/httpretry);
// errors of calls that ended so wrap it.
type StatusError = httpretry.StatusError

// retryTransport sends the node's POSTs — every MCP message of the
// streamable HTTP transport, and an SSE server's — through nerve's HTTP
// retry; other methods pass through: the SDK retries its GET stream
// itself, and a DELETE ends the session.
type retryTransport struct {
	base  http.RoundTripper
	retry *httpretry.Transport
}

func newRetryTransport(base http.RoundTripper, p httpretry.Policy) *retryTransport {
	return &retryTransport{base: base, retry: &httpretry.Transport{Base: base, Policy: p, Resend: mcpResend}}
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost {
		return t.base.RoundTrip(req)
	}
	return t.retry.RoundTrip(req)
}

// mcpResend is the rule for sending an MCP POST again. A 429 or 503 says
// the server did not process the message, so it is sent again whatever
// it is, as nerve always did. A 502 or 504 comes from a gateway that got
// no answer from the server, which may have run the message: it is sent
// again only when running it twice does what running it once does — a
// notification or a response (the server takes the first and drops the
// second), or a request that only reads or sets a value (tools/list,
// resources/read, ping, initialize, …). tools/call, and any method nerve
// does not know, is not: the call fails saying it may have run.
func mcpResend(req *http.Request, status int) bool {
	if httpretry.NotProcessed(status) {
		return true
	}
	if req.GetBody == nil {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, DefaultMaxMessage))
	if err != nil {
		return false
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return false
	}
	if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
		return repeatable[r.Method]
	}
	return true
}

// repeatable are the MCP requests that may run twice: they read, or set
// a value to what it already is.
var repeatable = map[string]bool{
	"initialize":               true,
	"ping":                     true,
	"tools/list":               true,
	"resources/list":           true,
	"resources/templates/list": true,
	"resources/read":           true,
	"resources/subscribe":      true,
	"resources/unsubscribe":    true,
	"prompts/list":             true,
	"prompts/get":              true,
	"completion/complete":      true,
	"logging/setLevel":         true,
}
