package fakemodel

import (
	"encoding/json"
	"net/http"
	"strings"

	"golang.org/x/net/websocket"
)

// The Responses API's WebSocket mode (GET /v1/responses, upgraded): the
// client sends each request as a text message {"type":"response.create",
// ...the fields of a POST /v1/responses body}, and the server answers with
// the stream events of that response, one JSON text message each, ending
// with response.completed; the connection then takes the next request. A
// failed request is one message {"type":"error","status":<HTTP status>,
// "error":{...}}. Other client messages (response.processed) need no
// answer. Two things are particular to the socket: a request may continue
// an earlier response of the same connection (previous_response_id) with
// only its new input items, and a request with "generate": false only
// warms the connection up, answered with an empty response.

// isWebSocket reports whether hr asks to upgrade to a WebSocket.
func isWebSocket(hr *http.Request) bool {
	return strings.EqualFold(hr.Header.Get("Upgrade"), "websocket")
}

// serveResponsesSocket upgrades hr and answers the requests that come over
// the socket, or refuses the upgrade as an endpoint without WebSocket mode
// does (404), so that a client falls back to HTTP.
func (s *Server) serveResponsesSocket(w http.ResponseWriter, hr *http.Request) {
	if s.refusingWebSockets() {
		s.record(&Request{API: Responses, Method: hr.Method, Path: hr.URL.Path, Header: hr.Header.Clone(), WebSocket: true})
		http.NotFound(w, hr)
		return
	}
	header := hr.Header.Clone()
	websocket.Server{
		// Clients of the API send no Origin; any is fine for a local fake.
		Handshake: func(*websocket.Config, *http.Request) error { return nil },
		Handler:   func(ws *websocket.Conn) { s.answerSocket(ws, hr.URL.Path, header) },
	}.ServeHTTP(w, hr)
}

// answerSocket answers the response.create messages of one connection in
// order, until the client closes it.
func (s *Server) answerSocket(ws *websocket.Conn, path string, header http.Header) {
	messages := make(chan []byte)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for {
			var msg []byte
			if err := websocket.Message.Receive(ws, &msg); err != nil {
				return
			}
			select {
			case messages <- msg:
			case <-s.done:
				return
			}
		}
	}()
	defer ws.Close()
	// The conversation so far (input and output items) of each response
	// this connection gave, for requests that continue one.
	turns := map[string][]any{}
	for {
		var msg []byte
		select {
		case msg = <-messages:
		case <-closed:
			return
		case <-s.done:
			return
		}
		r := &Request{API: Responses, Method: http.MethodGet, Path: path, Header: header, Body: msg, Stream: true, WebSocket: true}
		_ = json.Unmarshal(msg, &r.decoded)
		if r.decoded["type"] != "response.create" {
			continue
		}
		r.Model, _ = r.decoded["model"].(string)
		if !continueTurn(r, turns) {
			reply := Reply{Status: http.StatusBadRequest, ErrorMessage: "Previous response not found."}
			if !send(ws, []map[string]any{{"type": "error", "status": reply.Status, "error": errorBody(reply)}}) {
				return
			}
			continue
		}
		respond := s.record(r)
		var reply Reply
		if r.decoded["generate"] != false {
			reply = s.withUsage(respond(r))
		}
		if reply.Hold != nil {
			select {
			case <-reply.Hold:
			case <-closed:
				return
			}
		}
		if reply.Status != 0 {
			if !send(ws, []map[string]any{{"type": "error", "status": reply.Status, "error": errorBody(reply)}}) {
				return
			}
			continue
		}
		final, events := responsesEvents(r, reply)
		input, _ := r.decoded["input"].([]any)
		output, _ := final["output"].([]any)
		turns[final["id"].(string)] = append(append([]any{}, input...), output...)
		if !send(ws, events) {
			return
		}
	}
}

// continueTurn puts the conversation of the response r continues, if any,
// before r's input, so that r reads as the whole conversation the way the
// API sees it (Body included). It reports false for a previous response
// this connection did not give.
func continueTurn(r *Request, turns map[string][]any) bool {
	prev, _ := r.decoded["previous_response_id"].(string)
	if prev == "" {
		return true
	}
	earlier, ok := turns[prev]
	if !ok {
		return false
	}
	input, _ := r.decoded["input"].([]any)
	r.decoded["input"] = append(append([]any{}, earlier...), input...)
	r.Body, _ = json.Marshal(r.decoded)
	return true
}

// send sends events, one message each, and says whether the connection
// still works.
func send(ws *websocket.Conn, events []map[string]any) bool {
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		if err := websocket.Message.Send(ws, string(b)); err != nil {
			return false
		}
	}
	return true
}
