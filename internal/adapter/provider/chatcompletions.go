package provider

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2amesh/a2amesh/mesh"
)

// maxErrorBody bounds how much of an error answer is read and quoted.
const maxErrorBody = 4 << 10

// chatHost runs tasks on an agent server's chat completions endpoint: the
// task's directories, its session and its result, leaving to each provider
// how the request reads.
type chatHost struct {
	// sessions, when set, keeps one server session per conversation.
	sessions         *SessionStore
	maxArtifactBytes int64
	redact           redactor
}

// run sends t and returns when the answer is complete or ctx ends. start
// builds the request, given the session key it carries ("" for a stateless
// request) and the progress that streamed text feeds. meta starts the
// result's output.metadata.
func (h *chatHost) run(ctx context.Context, t *Task, progress func(Progress), meta map[string]any, start func(session string, text *textProgress, report func(string)) chatCall) (*Result, error) {
	res, err := h.runOnce(ctx, t, newReporter(progress, h.redact), meta, start)
	return res, h.redact.err(err)
}

func (h *chatHost) runOnce(ctx context.Context, t *Task, report func(string), meta map[string]any, start func(string, *textProgress, func(string)) chatCall) (*Result, error) {
	if err := t.PrepareDirs(); err != nil {
		return nil, err
	}
	defer func() { _ = t.RemoveRunDir() }()
	session, resumed, err := chatSession(h.sessions, t)
	if err != nil {
		return nil, err
	}
	text := newTextProgress(report)
	answer, err := start(session, text, report).converse(ctx, text, report)
	if err != nil {
		if resumed {
			forgetSession(h.sessions, t, session)
		}
		return nil, err
	}
	if err := rememberSession(h.sessions, t, session); err != nil {
		return nil, err
	}
	if answer.model != "" {
		meta["model"] = answer.model
	}
	if answer.usage != nil {
		meta["usage"] = answer.usage
	}
	if session != "" {
		meta["session_id"] = session
	}
	if resumed {
		meta["resumed"] = true
	}
	res, err := buildResult(t, strings.TrimSpace(answer.text), meta, h.maxArtifactBytes, h.redact)
	u := answer.spent
	if u == nil {
		u = chatUsage(answer.usage, answer.model)
	}
	if err == nil && u != nil {
		res.Output["usage"] = u
	}
	return res, err
}

// chatSession returns the session key a chat request carries: the one
// remembered for t's conversation, a new one when sessions persist, or ""
// for a stateless request. resumed says whether the key was remembered.
func chatSession(s *SessionStore, t *Task) (key string, resumed bool, err error) {
	if s == nil || t.Request.ConversationID == "" {
		return "", false, nil
	}
	key, err = s.Get(t.Request.ConversationID)
	if err != nil || key != "" {
		return key, key != "", err
	}
	// A random key, not one derived from the conversation id, so that a
	// forgotten session is never silently picked up again.
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "a2a-" + hex.EncodeToString(b), false, nil
}

// taskMessages are the messages of t's request: the instructions and the
// outputs note as a system message, then the task's prompt.
func taskMessages(t *Task) []map[string]string {
	return []map[string]string{
		{"role": "system", "content": systemText(t)},
		{"role": "user", "content": taskPrompt(t)},
	}
}

// chatCall is one request to an agent server's OpenAI-compatible chat
// completions endpoint (POST /v1/chat/completions), the interface the
// OpenClaw gateway and the Hermes API server both offer. It asks for a
// streamed answer: Server-Sent Events whose data is a chat.completion.chunk
// (choices[0].delta.content), ended by "data: [DONE]". A server that answers
// with one JSON completion instead (choices[0].message.content) works too.
type chatCall struct {
	// server names the server in error messages: "the OpenClaw gateway".
	server string
	// url is the endpoint.
	url string
	// token is sent as "Authorization: Bearer"; tokenEnv names the variable
	// it came from, for the message when the server refuses it.
	token, tokenEnv string
	// notFound explains a 404: usually the endpoint is disabled.
	notFound string
	header   http.Header
	body     map[string]any
	client   *http.Client
	// onEvent, when set, gets the data of named events, which servers use
	// for their own progress (Hermes's hermes.tool.progress).
	onEvent func(name string, data []byte)
	// tools, when set, are tools the adapter runs for the server: they go
	// in the request's "tools", and an answer that calls them is followed
	// by a request with their results (chatTools).
	tools chatTools
}

// chatToolCall is a function call an answer asks the client to make.
type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// chatToolCallDelta is a piece of a streamed function call; the pieces of
// one call share its index.
type chatToolCallDelta struct {
	Index int `json:"index"`
	chatToolCall
}

// chatAnswer is a finished chat completion.
type chatAnswer struct {
	text  string
	model string
	usage map[string]any
	// spent is what every round of a conversation with tool calls used,
	// added up; nil when the answer took one round.
	spent *mesh.Usage
	// toolCalls are the calls the answer asks the client to make.
	toolCalls []chatToolCall
}

// chatChunk is a chat.completion.chunk or, without streaming, a
// chat.completion.
type chatChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content   string              `json:"content"`
			ToolCalls []chatToolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		Message struct {
			Content   string         `json:"content"`
			ToolCalls []chatToolCall `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Usage map[string]any  `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// maxToolRounds bounds the requests of one task that answer tool results:
// a host that keeps calling tools ends the task rather than running on.
const maxToolRounds = 50

// converse sends the request and, while the answer calls the adapter's
// tools, runs them and sends their results back in a request that repeats
// the conversation, as a Chat Completions client does. The answer's text
// is each round's, in order, a blank line between them.
func (c chatCall) converse(ctx context.Context, text *textProgress, report func(string)) (*chatAnswer, error) {
	if c.tools == nil {
		return c.do(ctx, text.add)
	}
	c.body["tools"] = c.tools.functions()
	messages := anyMessages(c.body["messages"])
	var passages []string
	var spent *mesh.Usage
	for round := 0; ; round++ {
		answer, err := c.do(ctx, text.add)
		if err != nil {
			return nil, err
		}
		passages = append(passages, answer.text)
		if u := chatUsage(answer.usage, answer.model); u != nil {
			spent = spent.Plus(u)
		}
		if len(answer.toolCalls) == 0 {
			answer.text = joinParagraphs(passages...)
			answer.spent = spent
			return answer, nil
		}
		if round == maxToolRounds {
			return nil, fmt.Errorf("%s still called tools after %d rounds of tool results", c.server, maxToolRounds)
		}
		text.reset()
		messages = append(messages, map[string]any{"role": "assistant", "content": answer.text, "tool_calls": answer.toolCalls})
		for _, call := range answer.toolCalls {
			report(describeToolCall(call))
			result := c.tools.call(ctx, call.Function.Name, call.Function.Arguments)
			messages = append(messages, map[string]any{"role": "tool", "tool_call_id": call.ID, "content": result})
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", c.server, ctx.Err())
		}
		c.body["messages"] = messages
	}
}

// anyMessages copies a request's messages into a list more can be added to.
func anyMessages(v any) []any {
	var out []any
	switch m := v.(type) {
	case []map[string]string:
		for _, msg := range m {
			out = append(out, msg)
		}
	case []any:
		out = append(out, m...)
	}
	return out
}

// describeToolCall is the progress message of a tool call.
func describeToolCall(call chatToolCall) string {
	var args map[string]any
	_ = json.Unmarshal([]byte(call.Function.Arguments), &args)
	return describeTool(call.Function.Name, args)
}

// do sends the request and reads the answer. onDelta gets each piece of
// streamed text.
func (c chatCall) do(ctx context.Context, onDelta func(string)) (*chatAnswer, error) {
	body, err := json.Marshal(c.body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.server, err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream, application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	client := c.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", c.server, ctx.Err())
		}
		return nil, fmt.Errorf("%s is not reachable at %s: %w", c.server, c.url, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, c.statusError(resp)
	}
	answer := &chatAnswer{}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return answer, c.readCompletion(resp.Body, answer)
	}
	err = c.readStream(resp.Body, answer, onDelta)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", c.server, ctx.Err())
	}
	return answer, err
}

func (c chatCall) readCompletion(r io.Reader, answer *chatAnswer) error {
	var done chatChunk
	if err := json.NewDecoder(io.LimitReader(r, maxEventLine)).Decode(&done); err != nil {
		return fmt.Errorf("%s answered with neither an event stream nor a chat completion: %w", c.server, err)
	}
	if msg := errorMessage(done.Error); msg != "" {
		return fmt.Errorf("%s reported an error: %s", c.server, msg)
	}
	if len(done.Choices) == 0 {
		return fmt.Errorf("%s answered with a chat completion without choices", c.server)
	}
	answer.text, answer.model, answer.usage = done.Choices[0].Message.Content, done.Model, done.Usage
	answer.toolCalls = done.Choices[0].Message.ToolCalls
	return nil
}

func (c chatCall) readStream(r io.Reader, answer *chatAnswer, onDelta func(string)) error {
	var text strings.Builder
	var calls []chatToolCall
	finished := false
	err := readSSE(r, func(ev sseEvent) error {
		if ev.Event != "" && ev.Event != "message" {
			if c.onEvent != nil {
				c.onEvent(ev.Event, []byte(ev.Data))
			}
			return nil
		}
		if strings.TrimSpace(ev.Data) == "[DONE]" {
			finished = true
			return io.EOF
		}
		var chunk chatChunk
		if err := decodeEvent([]byte(ev.Data), &chunk); err != nil {
			return fmt.Errorf("%s sent an event that is not a chat completion chunk: %s", c.server, quoteShort(ev.Data))
		}
		if msg := errorMessage(chunk.Error); msg != "" {
			return fmt.Errorf("%s reported an error: %s", c.server, msg)
		}
		if chunk.Model != "" {
			answer.model = chunk.Model
		}
		if chunk.Usage != nil {
			answer.usage = chunk.Usage
		}
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			text.WriteString(chunk.Choices[0].Delta.Content)
			if onDelta != nil {
				onDelta(chunk.Choices[0].Delta.Content)
			}
		}
		if len(chunk.Choices) > 0 {
			calls = addToolCallDeltas(calls, chunk.Choices[0].Delta.ToolCalls)
		}
		return nil
	})
	answer.text, answer.toolCalls = text.String(), calls
	switch {
	case errors.Is(err, io.EOF) && finished:
		return nil
	case err != nil && !errors.Is(err, io.EOF):
		if strings.HasPrefix(err.Error(), c.server) {
			return err
		}
		return fmt.Errorf("%s: reading the answer: %w", c.server, err)
	case !finished:
		return fmt.Errorf("%s: %w (no [DONE])", c.server, errStreamIncomplete)
	}
	return nil
}

// addToolCallDeltas adds streamed pieces of function calls to calls: the
// first piece of a call carries its id and name, the arguments come in
// pieces to put together.
func addToolCallDeltas(calls []chatToolCall, deltas []chatToolCallDelta) []chatToolCall {
	for _, d := range deltas {
		if d.Index < 0 || d.Index > len(calls) {
			continue
		}
		if d.Index == len(calls) {
			calls = append(calls, chatToolCall{Type: "function"})
		}
		c := &calls[d.Index]
		c.ID = firstNonEmpty(c.ID, d.ID)
		c.Function.Name = firstNonEmpty(c.Function.Name, d.Function.Name)
		c.Function.Arguments += d.Function.Arguments
	}
	return calls
}

// statusError explains an unsuccessful answer, quoting the server's own
// message.
func (c chatCall) statusError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	detail := ""
	if json.Unmarshal(b, &body) == nil {
		detail = firstNonEmpty(errorMessage(body.Error), body.Message)
	}
	if detail == "" {
		detail = oneLine(string(b), 300)
	}
	status := fmt.Sprintf("HTTP %d", resp.StatusCode)
	var msg string
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg = fmt.Sprintf("%s refused the credential (%s); check %s", c.server, status, c.tokenEnv)
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		msg = fmt.Sprintf("%s has no chat completions endpoint at %s (%s)", c.server, c.url, status)
		if c.notFound != "" {
			msg += "; " + c.notFound
		}
	case http.StatusTooManyRequests:
		msg = fmt.Sprintf("%s is busy (%s)", c.server, status)
	default:
		msg = fmt.Sprintf("%s answered %s", c.server, status)
	}
	if detail != "" {
		msg += ": " + detail
	}
	return errors.New(msg)
}

// errorMessage reads an OpenAI-style error: {"message": ...} or a string.
func errorMessage(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(raw, &obj) == nil && (obj.Message != "" || obj.Type != "") {
		return firstNonEmpty(obj.Message, obj.Type)
	}
	return oneLine(string(raw), 300)
}

// unwrapURLError drops net/http's "Post <url>:" prefix, already said.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
