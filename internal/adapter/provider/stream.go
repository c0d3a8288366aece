package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxEventLine bounds one line of a host's event stream. Some hosts put the
// whole answer in one line (Claude Code's result event), so the bound is the
// output cap; a longer line is dropped and counted.
const maxEventLine = DefaultMaxStdoutBytes

// eventLines is the stdout of a host that prints one JSON event per line
// (JSONL). It hands each complete line, without its line end, to fn. It never
// fails a write, so a host is never blocked on a full pipe.
type eventLines struct {
	fn      func(line []byte)
	max     int
	line    []byte
	over    bool
	dropped int
}

// Write hands every line completed by p to fn.
func (e *eventLines) Write(p []byte) (int, error) {
	splitLines(p, e.add, e.flush)
	return len(p), nil
}

func (e *eventLines) add(p []byte) {
	limit := e.max
	if limit <= 0 {
		limit = maxEventLine
	}
	if len(e.line)+len(p) > limit {
		e.over = true
		return
	}
	e.line = append(e.line, p...)
}

// flush hands over the pending line; call it once the host is gone, for a
// last line without a line end.
func (e *eventLines) flush() {
	switch {
	case e.over:
		e.dropped++
	case len(bytes.TrimSpace(e.line)) > 0:
		e.fn(bytes.TrimSuffix(e.line, []byte("\r")))
	}
	e.line, e.over = e.line[:0], false
}

// jsonlReader decodes a host's JSON event lines and keeps count of the lines
// that are not JSON objects, so that a host printing garbage fails with a
// sample of it instead of an empty answer.
type jsonlReader struct {
	lines  eventLines
	events int
	bad    int
	sample string
}

// eventsOf adapts a handler of one host's events to newJSONLReader: each
// line is decoded leniently (see decodeEvent) into a new T, and a line that
// does not decode is passed over.
func eventsOf[T any](handle func(*T)) func(raw []byte) {
	return func(raw []byte) {
		var ev T
		if decodeEvent(raw, &ev) == nil {
			handle(&ev)
		}
	}
}

// newJSONLReader calls handle with each line that holds a JSON object.
func newJSONLReader(handle func(raw []byte)) *jsonlReader {
	r := &jsonlReader{}
	r.lines.fn = func(line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' || !json.Valid(line) {
			r.bad++
			if r.sample == "" {
				r.sample = oneLine(string(line), 120)
			}
			return
		}
		r.events++
		handle(line)
	}
	return r
}

// Write takes the host's stdout.
func (r *jsonlReader) Write(p []byte) (int, error) { return r.lines.Write(p) }

// finish hands over a last line without a line end.
func (r *jsonlReader) finish() { r.lines.flush() }

// noResult describes a run whose event stream ended without the host's
// result, with a sample of any output that was not the event stream.
func (r *jsonlReader) noResult() string {
	msg := "ended without a result"
	if g := r.garbage(); g != "" {
		msg += "; " + g
	}
	return msg
}

// garbage describes output that was not the host's event stream, or "" when
// there was none.
func (r *jsonlReader) garbage() string {
	if r.bad == 0 && r.lines.dropped == 0 {
		return ""
	}
	var b strings.Builder
	if r.bad > 0 {
		b.WriteString(plural(r.bad, "line") + " of output were not JSON events")
		if r.sample != "" {
			b.WriteString(" (first: " + quoteShort(r.sample) + ")")
		}
	}
	if r.lines.dropped > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(plural(r.lines.dropped, "line") + " over the size limit were dropped")
	}
	return b.String()
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	// Event is the "event:" field; empty for the default "message" event.
	Event string
	// Data is the "data:" fields joined by newlines.
	Data string
}

// readSSE reads Server-Sent Events (the WHATWG event stream format) from r
// and calls fn with each event that has data, until r ends or fn returns an
// error, which readSSE returns. The end of r is not an error.
func readSSE(r io.Reader, fn func(sseEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxEventLine)
	var ev sseEvent
	var data []string
	dispatch := func() error {
		defer func() { ev, data = sseEvent{}, nil }()
		if data == nil {
			return nil
		}
		ev.Data = strings.Join(data, "\n")
		return fn(ev)
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if err := dispatch(); err != nil {
				return err
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment, often a keep-alive
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Event = value
		case "data":
			data = append(data, value)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// A stream may end without the blank line after its last event.
	return dispatch()
}

// textProgressEvery is how much more streamed text earns another progress
// report once a passage has been reported: a long answer yields a few
// reports, not one per token.
const textProgressEvery = 600

// textProgress turns assistant text streamed in deltas into a few short
// progress reports: the first sentence of each passage (the text between
// two tool calls), then the latest sentence every textProgressEvery
// characters.
type textProgress struct {
	report   func(string)
	passage  strings.Builder
	reported int // passage length at the last report; -1 before the first
}

func newTextProgress(report func(string)) *textProgress {
	return &textProgress{report: report, reported: -1}
}

// add appends streamed text to the current passage.
func (p *textProgress) add(delta string) {
	p.passage.WriteString(delta)
	text := p.passage.String()
	if p.reported < 0 {
		if s, complete := firstSentence(text); complete || len(text) >= 200 {
			p.say(s, len(text))
		}
		return
	}
	if len(text)-p.reported >= textProgressEvery {
		p.say(lastSentence(text[p.reported:]), len(text))
	}
}

// reset starts a new passage: the host did something else in between.
func (p *textProgress) reset() {
	p.passage.Reset()
	p.reported = -1
}

func (p *textProgress) say(s string, at int) {
	p.reported = at
	if s = sentence(s); s != "" {
		p.report(s)
	}
}

// maxSentence bounds a sentence quoted in a progress report.
const maxSentence = 140

// sentence returns the first sentence of text on one line, shortened to
// maxSentence characters and without Markdown emphasis: what a progress
// report quotes of assistant text.
func sentence(text string) string {
	text = strings.NewReplacer("**", "", "__", "", "`", "").Replace(text)
	s, _ := firstSentence(strings.TrimSpace(text))
	return oneLine(s, maxSentence)
}

// firstSentence returns the prefix of text up to the end of its first
// sentence, and whether that sentence is complete.
func firstSentence(text string) (string, bool) {
	for i, r := range text {
		switch r {
		case '\n':
			if strings.TrimSpace(text[:i]) != "" {
				return text[:i], true
			}
		case '.', '!', '?', '。', '！', '？':
			end := i + utf8.RuneLen(r)
			if end == len(text) || r >= utf8.RuneSelf {
				return text[:end], true
			}
			if next, _ := utf8.DecodeRuneInString(text[end:]); unicode.IsSpace(next) {
				return text[:end], true
			}
		}
	}
	return text, false
}

// lastSentence returns the last complete sentence of text, or all of it
// when it has none.
func lastSentence(text string) string {
	last, rest := "", text
	for strings.TrimSpace(rest) != "" {
		s, complete := firstSentence(rest)
		if !complete {
			break
		}
		last, rest = s, rest[len(s):]
	}
	if strings.TrimSpace(last) == "" {
		return text
	}
	return last
}

// oneLine collapses the white space of s, newlines included, and shortens
// it to max characters with an ellipsis.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:max-1])) + "…"
}

func quoteShort(s string) string { return "\"" + oneLine(s, 120) + "\"" }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// errStreamIncomplete marks an event stream that ended before the host said
// it was done.
var errStreamIncomplete = errors.New("the stream ended before it was complete")
