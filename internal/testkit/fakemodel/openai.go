package fakemodel

import (
	"net/http"
	"time"
)

// writeResponses answers a Responses API request over HTTP: one JSON
// response, or its stream events (responsesEvents) as Server-Sent Events.
func writeResponses(w http.ResponseWriter, r *Request, reply Reply) {
	final, events := responsesEvents(r, reply)
	if !r.Stream {
		writeJSON(w, http.StatusOK, final)
		return
	}
	s := newSSE(w)
	for _, ev := range events {
		s.event(ev["type"].(string), ev)
	}
}

// responsesEvents returns the completed response to a Responses API request
// and the events that stream it: response.created, a message item with its
// text streamed as output_text deltas, a function_call item, and
// response.completed with the usage.
func responsesEvents(r *Request, reply Reply) (map[string]any, []map[string]any) {
	respID := nextID("resp")
	var output []any
	if reply.Text != "" {
		output = append(output, map[string]any{"type": "message", "id": nextID("msg"), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}})
	}
	if reply.Tool != nil {
		call := map[string]any{"type": "function_call", "id": nextID("fc"), "call_id": nextID("call"),
			"name": reply.Tool.Name, "arguments": argsJSON(reply.Tool), "status": "completed"}
		if reply.Tool.Namespace != "" {
			call["namespace"] = reply.Tool.Namespace
		}
		output = append(output, call)
	}
	if output == nil {
		output = []any{}
	}
	u := usageOf(reply)
	usage := map[string]any{"input_tokens": u.Input, "input_tokens_details": map[string]any{"cached_tokens": u.Cached},
		"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": u.Input + u.Output}
	response := func(status string, out []any) map[string]any {
		m := map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status,
			"model": r.Model, "output": out}
		if status == "completed" {
			m["usage"] = usage
		}
		return m
	}
	events := []map[string]any{{"type": "response.created", "response": response("in_progress", []any{})}}
	for i, item := range output {
		it := item.(map[string]any)
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		if it["type"] == "message" {
			added["content"], added["status"] = []any{}, "in_progress"
		}
		events = append(events, map[string]any{"type": "response.output_item.added", "output_index": i, "item": added})
		if it["type"] == "message" {
			for _, c := range chunks(reply.Text) {
				events = append(events, map[string]any{"type": "response.output_text.delta", "item_id": it["id"],
					"output_index": i, "content_index": 0, "delta": c})
			}
		}
		events = append(events, map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	final := response("completed", output)
	events = append(events, map[string]any{"type": "response.completed", "response": final})
	return final, events
}

// writeChat answers a Chat Completions request with chat.completion.chunk
// events ending in [DONE], or one chat.completion when not streamed.
func writeChat(w http.ResponseWriter, r *Request, reply Reply) {
	id, created := nextID("chatcmpl"), time.Now().Unix()
	finish := "stop"
	var toolCalls []any
	if reply.Tool != nil {
		finish = "tool_calls"
		toolCalls = []any{map[string]any{"index": 0, "id": nextID("call"), "type": "function",
			"function": map[string]any{"name": reply.Tool.Name, "arguments": argsJSON(reply.Tool)}}}
	}
	u := usageOf(reply)
	usage := map[string]any{"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.Cached}}
	if !r.Stream {
		msg := map[string]any{"role": "assistant", "content": reply.Text}
		if toolCalls != nil {
			msg["tool_calls"] = toolCalls
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": r.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	s := newSSE(w)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": r.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, c := range chunks(reply.Text) {
		s.event("", chunk(map[string]any{"content": c}, nil))
	}
	if toolCalls != nil {
		s.event("", chunk(map[string]any{"tool_calls": toolCalls}, nil))
	}
	last := chunk(map[string]any{}, finish)
	last["usage"] = usage
	s.event("", last)
	s.raw("data: [DONE]")
}
