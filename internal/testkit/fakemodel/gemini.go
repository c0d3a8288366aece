package fakemodel

import "net/http"

// writeGemini answers generateContent with one GenerateContentResponse, and
// streamGenerateContent with a Server-Sent Event per chunk of text, then
// one with the function call, the finish reason and the usage.
func writeGemini(w http.ResponseWriter, r *Request, reply Reply) {
	model := r.Model
	u := usageOf(reply)
	usage := map[string]any{"promptTokenCount": u.Input, "candidatesTokenCount": u.Output, "totalTokenCount": u.Input + u.Output}
	if u.Cached > 0 {
		usage["cachedContentTokenCount"] = u.Cached
	}
	response := func(parts []any, finish string) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		m := map[string]any{"candidates": []any{cand}, "modelVersion": model}
		if finish != "" {
			m["usageMetadata"] = usage
		}
		return m
	}
	var toolPart []any
	if reply.Tool != nil {
		args := reply.Tool.Args
		if args == nil {
			args = map[string]any{}
		}
		toolPart = []any{map[string]any{"functionCall": map[string]any{"name": reply.Tool.Name, "args": args}}}
	}
	if !r.Stream {
		var parts []any
		if reply.Text != "" {
			parts = append(parts, map[string]any{"text": reply.Text})
		}
		parts = append(parts, toolPart...)
		writeJSON(w, http.StatusOK, response(parts, "STOP"))
		return
	}
	s := newSSE(w)
	for _, c := range chunks(reply.Text) {
		s.event("", response([]any{map[string]any{"text": c}}, ""))
	}
	if toolPart == nil {
		toolPart = []any{map[string]any{"text": ""}}
	}
	s.event("", response(toolPart, "STOP"))
}
