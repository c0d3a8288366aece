package provider

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestEventLines_SplitsAcrossWritesAndDropsOverlongLines(t *testing.T) {
	var got []string
	e := &eventLines{fn: func(b []byte) { got = append(got, string(b)) }, max: 10}
	for _, chunk := range []string{`{"a":`, "1}\r\n\n", "0123456789abc\n", "  \n", `{"b":2}`} {
		e.Write([]byte(chunk))
	}
	e.flush()
	want := []string{`{"a":1}`, `{"b":2}`}
	if !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	if e.dropped != 1 {
		t.Fatalf("dropped %d, want the one overlong line", e.dropped)
	}
}

func TestJSONLReader_CountsWhatIsNotAnEvent(t *testing.T) {
	var events int
	r := newJSONLReader(func([]byte) { events++ })
	io.WriteString(r, "{\"type\":\"x\"}\nnot json\n[1,2]\n{broken\n")
	r.finish()
	if events != 1 || r.bad != 3 {
		t.Fatalf("events %d bad %d, want 1 and 3", events, r.bad)
	}
	if g := r.garbage(); !strings.Contains(g, "3 lines of output were not JSON events") || !strings.Contains(g, `"not json"`) {
		t.Fatalf("garbage() = %q", g)
	}
}

func TestReadSSE_ReadsEventsAsSpecified(t *testing.T) {
	stream := ": keep-alive\r\n\r\n" +
		"data: one\r\n\r\n" +
		"event: hermes.tool.progress\ndata: {\"tool\":\"x\"}\n\n" +
		"data: line 1\ndata:line 2\nid: 7\nretry: 10\n\n" +
		"data: last without a blank line"
	var got []sseEvent
	err := readSSE(iotest.OneByteReader(strings.NewReader(stream)), func(ev sseEvent) error {
		got = append(got, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []sseEvent{
		{Data: "one"},
		{Event: "hermes.tool.progress", Data: `{"tool":"x"}`},
		{Data: "line 1\nline 2"},
		{Data: "last without a blank line"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestReadSSE_StopsWithTheCallbacksError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := readSSE(strings.NewReader("data: a\n\ndata: b\n\n"), func(sseEvent) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("err %v after %d events", err, n)
	}
}

func TestTextProgress_ReportsSentencesNotTokens(t *testing.T) {
	var got []string
	p := newTextProgress(func(s string) { got = append(got, s) })
	for _, d := range strings.SplitAfter("I will **check** the logs. They are long and", " ") {
		p.add(d)
	}
	p.add(strings.Repeat("x", textProgressEvery) + ". Found it! ")
	p.reset()
	p.add("Second passage. More.")
	want := []string{"I will check the logs.", "Found it!", "Second passage."}
	if !slices.Equal(got, want) {
		t.Fatalf("reports %q, want %q", got, want)
	}
}

func TestSentence(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Done. Next step.", "Done."},
		{"  Version 1.2 works!\nMore", "Version 1.2 works!"},
		{"no end in sight", "no end in sight"},
		{"\n\nFirst line\nsecond", "First line"},
		{"完成了。下一步", "完成了。"},
		{strings.Repeat("word ", 50), strings.TrimSpace(strings.Repeat("word ", 28)) + "…"},
	}
	for _, tt := range tests {
		if got := sentence(tt.in); got != tt.want {
			t.Errorf("sentence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
