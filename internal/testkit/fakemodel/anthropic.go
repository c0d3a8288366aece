package fakemodel

import (
	"fmt"
	"net/http"
	"sync/atomic"
)

var ids atomic.Int64

func nextID(prefix string) string { return fmt.Sprintf("%s_%d", prefix, ids.Add(1)) }

// writeAnthropic answers a Messages request: a message_start, a text block
// streamed in deltas, a tool_use block with its input as one JSON delta,
// message_delta with the stop reason and message_stop; or the whole
// message as JSON when the request did not ask for a stream.
func writeAnthropic(w http.ResponseWriter, r *Request, reply Reply) {
	model := r.Model
	if model == "" {
		model = "claude-fake"
	}
	id := nextID("msg")
	stop := "end_turn"
	var content []any
	if reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	var toolID string
	if reply.Tool != nil {
		stop, toolID = "tool_use", nextID("toolu")
		content = append(content, map[string]any{"type": "tool_use", "id": toolID, "name": reply.Tool.Name, "input": reply.Tool.Args})
	}
	// Anthropic counts cache reads apart from input_tokens.
	u := usageOf(reply)
	usage := map[string]any{"input_tokens": u.Input - u.Cached, "output_tokens": u.Output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": u.Cached}
	if !r.Stream {
		if content == nil {
			content = []any{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	s := newSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": u.Input - u.Cached, "output_tokens": 1,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": u.Cached}}})
	index := 0
	if reply.Text != "" {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, c := range chunks(reply.Text) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": c}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if reply.Tool != nil {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{
			"type": "tool_use", "id": toolID, "name": reply.Tool.Name, "input": map[string]any{}}})
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{
			"type": "input_json_delta", "partial_json": argsJSON(reply.Tool)}})
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	}
	s.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u.Output}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}
