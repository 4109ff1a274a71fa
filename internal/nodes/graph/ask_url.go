package graph

import (
	"crypto/rand"
	"fmt"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An `ask:` step with `url:` asks the person to open a page (a sign-off in
// a CI system, a payment) as a URL-mode elicitation (MCP 2025-11-25): the
// Commander shows the page and waits until the person is done there; an
// MCP client of `nerve mcp serve` that declared URL mode shows it itself.
// Done ("accept") lets the graph go on (issue 27).

// pageURL checks the page an ask step's url: names, once its references
// are filled in: an absolute http or https URL, as the spec requires.
func pageURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("url %q is not a web page's address: an ask step's url must be an absolute http or https URL", s)
	}
	return s, nil
}

// urlElicitation is the request of an ask step with a page.
func urlElicitation(question, page string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "url", Message: question, URL: page, ElicitationID: "nerve-" + rand.Text()}
}
