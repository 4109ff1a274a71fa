package mcpclient

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// textResult is the common tool result: text content only, as the SDK
// writes it. Any other field makes decoding it fail (DisallowUnknownFields),
// and the SDK decodes the result instead.
type textResult struct {
	Meta              mcp.Meta   `json:"_meta"`
	Content           []textItem `json:"content"`
	StructuredContent any        `json:"structuredContent"`
	IsError           bool       `json:"isError"`
	// ResultType "complete" is what the SDK's server writes for clients of
	// the 2026 protocol; it sets it again when it passes the result on.
	ResultType string `json:"resultType"`
}

type textItem struct {
	Type        string           `json:"type"`
	Text        string           `json:"text"`
	Meta        mcp.Meta         `json:"_meta"`
	Annotations *mcp.Annotations `json:"annotations"`
}

// Result decodes a CallToolResult as pkg/client returns it. The SDK's UnmarshalJSON reads
// through a JSON decoder with a fresh 32 KB buffer, so a small result cost
// ~38 KB of garbage per call, the most of anything nerve allocates on the
// call path; a text-only result is decoded here with encoding/json into
// the same values, anything else (images, resources, input requests, fields
// this code does not know) by the SDK.
func Result(data []byte) (*mcp.CallToolResult, error) {
	var fast textResult
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(&fast) == nil && !dec.More() && (fast.ResultType == "" || fast.ResultType == "complete") {
		res := &mcp.CallToolResult{
			Meta:              fast.Meta,
			Content:           make([]mcp.Content, 0, len(fast.Content)),
			StructuredContent: fast.StructuredContent,
			IsError:           fast.IsError,
		}
		ok := true
		for _, c := range fast.Content {
			if c.Type != "text" {
				ok = false
				break
			}
			res.Content = append(res.Content, &mcp.TextContent{Text: c.Text, Meta: c.Meta, Annotations: c.Annotations})
		}
		if ok {
			return res, nil
		}
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
