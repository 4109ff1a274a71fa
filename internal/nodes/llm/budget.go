package llm

import (
	"fmt"
	"strings"

	"github.com/nerve-dev/nerve/internal/nodes/llm/provider"
	"github.com/nerve-dev/nerve/internal/syncs"
)

// bytesPerToken is the estimate used for the context budget: about right
// for English and JSON with the tokenizers of current models, and cheap.
const bytesPerToken = 4

// Notices written into the conversation when it is cut, so the model (and
// a person reading it) knows something is missing.
const (
	droppedResultNotice   = "[This tool result was removed to keep the conversation under its context budget of %d tokens; call the tool again if you need it.]"
	droppedMessagesPrefix = "[Earlier messages were removed to keep the conversation under its context budget"
)

func messageTokens(m provider.Message) int {
	n := len(m.Content) + len(m.Role) + 16
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments) + 16
	}
	for _, img := range m.Images {
		n += len(img.Data) / 2
	}
	return n/bytesPerToken + 1
}

type contextData struct {
	Budget               int `json:"budget"`
	EstimatedTokens      int `json:"estimated_tokens"`
	DroppedToolResults   int `json:"dropped_tool_results"`
	DroppedMessages      int `json:"dropped_messages"`
	EstimatedTokensAfter int `json:"estimated_tokens_after"`
}

// fit keeps the conversation under the token budget and returns a copy
// to send. Oldest tool results go first (their content replaced by a
// notice, so every tool call keeps its answer); if that is not enough,
// the oldest exchanges (a user message and what followed it) are dropped
// and a notice at the start says so. The last user message is always kept.
func (n *Node) fit(em *emitter, toolBytes int) []provider.Message {
	n.mu.Lock()
	defer n.mu.Unlock()
	budget := n.opts.ContextTokens - n.opts.MaxTokens
	if budget < n.opts.ContextTokens/2 {
		budget = n.opts.ContextTokens / 2
	}
	fixed := (len(em.system)+toolBytes)/bytesPerToken + 1
	total := fixed
	for _, m := range n.msgs {
		total += messageTokens(m)
	}
	if total <= budget {
		return append([]provider.Message(nil), n.msgs...)
	}
	info := contextData{Budget: n.opts.ContextTokens, EstimatedTokens: total}
	notice := fmt.Sprintf(droppedResultNotice, n.opts.ContextTokens)
	for i := range n.msgs {
		if total <= budget {
			break
		}
		m := &n.msgs[i]
		if m.Role != provider.RoleTool || m.Content == notice {
			continue
		}
		before := messageTokens(*m)
		m.Content = notice
		total += messageTokens(*m) - before
		info.DroppedToolResults++
	}
	if total > budget {
		total = n.dropExchangesLocked(total, budget, &info)
	}
	info.EstimatedTokensAfter = total
	n.saveLocked()
	em.step(StepContext, info)
	return append([]provider.Message(nil), n.msgs...)
}

// dropExchangesLocked removes whole exchanges from the start until total
// fits budget or only the last user message's exchange is left.
func (n *Node) dropExchangesLocked(total, budget int, info *contextData) int {
	syncs.AssertLocked(&n.mu)
	msgs := n.msgs
	dropped := 0
	if len(msgs) > 0 && msgs[0].Role == provider.RoleUser && strings.HasPrefix(msgs[0].Content, droppedMessagesPrefix) {
		fmt.Sscanf(msgs[0].Content[len(droppedMessagesPrefix):], " (%d", &dropped)
		total -= messageTokens(msgs[0])
		msgs = msgs[1:]
	}
	lastUser := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == provider.RoleUser {
			lastUser = i
			break
		}
	}
	cut := 0
	for cut < lastUser && total > budget {
		// Drop up to the next user message: an exchange never splits, so
		// no tool result is left without its call.
		next := cut + 1
		for next < lastUser && msgs[next].Role != provider.RoleUser {
			next++
		}
		for _, m := range msgs[cut:next] {
			total -= messageTokens(m)
		}
		info.DroppedMessages += next - cut
		cut = next
	}
	dropped += cut
	msgs = msgs[cut:]
	if dropped > 0 {
		note := provider.Message{Role: provider.RoleUser, Content: fmt.Sprintf("%s (%d messages so far); what came before is not available.]", droppedMessagesPrefix, dropped)}
		total += messageTokens(note)
		msgs = append([]provider.Message{note}, msgs...)
	}
	n.msgs = append([]provider.Message(nil), msgs...)
	return total
}
