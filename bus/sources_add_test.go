package bus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/syncbuf"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// TestTendSources_WarnsOfASourceItCannotAddOnlyOnceTheFailureLasts: a
// source the tending cannot add to a stream is tried again each pass; a
// failure of one pass (a stream still starting after its server came
// back refuses changes for a moment) is logged at debug level, one that
// has lasted SourceStallAfter warns, and once the source is added the
// failure is forgotten.
func TestTendSources_WarnsOfASourceItCannotAddOnlyOnceTheFailureLasts(t *testing.T) {
	js := embeddedJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, cfg := range []jetstream.StreamConfig{
		{Name: "ORIGIN", Subjects: []string{"origin.>"}},
		{Name: "OTHER", Subjects: []string{"other.>"}},
		// A mirror takes no sources: adding one fails every time.
		{Name: "COPY", Mirror: &jetstream.StreamSource{Name: "OTHER"}},
	} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	logs := &syncbuf.Buffer{}
	tr := newTender(js, zerolog.New(logs).Level(zerolog.DebugLevel))
	want := []*jetstream.StreamSource{{Name: "ORIGIN"}}
	noRegion := func(string) string { return "" }

	tr.tend(ctx, "COPY", noRegion, want)
	if log := logs.String(); !strings.Contains(log, `"level":"debug"`) || !strings.Contains(log, "could not add a region's source") || strings.Contains(log, `"level":"warn"`) {
		t.Fatalf("a first failure logged:\n%s", log)
	}
	if _, ok := tr.failing["COPY/ORIGIN"]; !ok {
		t.Fatal("the failure was not noted")
	}
	// The failure has lasted: the next pass warns.
	tr.failing["COPY/ORIGIN"] = time.Now().Add(-SourceStallAfter - time.Second)
	tr.tend(ctx, "COPY", noRegion, want)
	if log := logs.String(); !strings.Contains(log, `"level":"warn"`) {
		t.Fatalf("a lasting failure did not warn:\n%s", log)
	}

	// The stream can take the source now: it is added and forgotten.
	if err := js.DeleteStream(ctx, "COPY"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "COPY"}); err != nil {
		t.Fatal(err)
	}
	tr.tend(ctx, "COPY", noRegion, want)
	if _, ok := tr.failing["COPY/ORIGIN"]; ok {
		t.Fatal("a source added is still noted as failing")
	}
	s, err := js.Stream(ctx, "COPY")
	if err != nil {
		t.Fatal(err)
	}
	if srcs := s.CachedInfo().Config.Sources; len(srcs) != 1 || srcs[0].Name != "ORIGIN" {
		t.Fatalf("COPY's sources: %+v", srcs)
	}
}
