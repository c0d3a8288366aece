package cliusage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// Every library error a person may see is said in plain words, with the
// program's own context around it kept.
func TestPlain_LibraryErrorsBecomePlainWordsAndKeepTheirContext(t *testing.T) {
	for _, raw := range []error{
		nats.ErrReconnectBufExceeded, nats.ErrConnectionClosed, nats.ErrConnectionDraining, nats.ErrTimeout,
		nats.ErrNoResponders, nats.ErrNoServers, nats.ErrAuthorization, nats.ErrMaxPayload, nats.ErrSlowConsumer,
		nats.ErrInvalidConnection, context.DeadlineExceeded,
	} {
		err := fmt.Errorf("report task run 42 completed: %w", raw)
		got := Plain(err)
		if strings.Contains(got, raw.Error()) || strings.Contains(got, "nats:") {
			t.Errorf("Plain(%q) = %q: still the library's words", err, got)
		}
		if !strings.HasPrefix(got, "report task run 42 completed: ") {
			t.Errorf("Plain(%q) = %q: the context is lost", err, got)
		}
	}
	if got := Plain(errors.New("agent 7 not found")); got != "agent 7 not found" {
		t.Errorf("Plain changed an error of the program's own: %q", got)
	}
	if Plain(nil) != "" {
		t.Error("Plain(nil) is not empty")
	}
}
