package api

// Lines of an attach stream opened as a commander
// (GET /v1/sessions/{s}/nodes/{n}/mcp/attach?as=commander). A commander —
// the REPL — is offered a request first and may pass it on: it takes the
// requests that arise while the person there has a call in flight, and
// leaves the others to a client attached with `nerve mcp serve --node`.
// When nobody else is attached, the commander gets the plain AttachSample
// or AttachElicit line, which it may not pass.
const (
	AttachOfferSample = "offer_sample" // like AttachSample, but may be passed
	AttachOfferElicit = "offer_elicit" // like AttachElicit, but may be passed

	// AttachAsCommander is the value of the attach route's "as" query
	// parameter that makes the stream a commander's.
	AttachAsCommander = "commander"
	// AttachWho is the attach route's query parameter by which a client
	// says who it is ("pid 4242 on /dev/pts/3"), for a caller whose
	// question it is asked (node.Asked).
	AttachWho = "who"

	// AttachPass is the AttachAnswer.Error of a commander that passes an
	// offered request on to the next client.
	AttachPass = "nerve:pass"
)

// The body of POST /v1/sessions/{s}/nodes/{n}/sample is an
// mcp.CreateMessageParams and its answer an mcp.CreateMessageResult: node n
// (an llm node, or any node with a Sample method) answers a sampling
// request that an MCP server made, after the person consented to it.
