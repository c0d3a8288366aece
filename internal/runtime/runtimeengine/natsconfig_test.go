package runtimeengine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
)

func TestNATSConfig_ValidateNamesEachBadField(t *testing.T) {
	good := runtimeengine.NATSConfig{URL: "nats://127.0.0.1:4222", AgentID: "a", RuntimeID: "r"}
	if err := good.Validate(); err != nil {
		t.Fatalf("a complete configuration: %v", err)
	}
	for _, c := range []struct {
		field  string
		change func(*runtimeengine.NATSConfig)
	}{
		{"URL", func(c *runtimeengine.NATSConfig) { c.URL = " " }},
		{"AgentID", func(c *runtimeengine.NATSConfig) { c.AgentID = "" }},
		{"RuntimeID", func(c *runtimeengine.NATSConfig) { c.RuntimeID = "" }},
		{"ClaimWait", func(c *runtimeengine.NATSConfig) { c.ClaimWait = -time.Second }},
		{"ConnectTimeout", func(c *runtimeengine.NATSConfig) { c.ConnectTimeout = -time.Second }},
		{"HomeCheck", func(c *runtimeengine.NATSConfig) { c.HomeCheck = -time.Second }},
	} {
		cfg := good
		c.change(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "NATSConfig."+c.field) {
			t.Errorf("%s: %v, want an error naming it", c.field, err)
		}
		// DialNATS refuses it before connecting anywhere.
		if _, _, err := runtimeengine.DialNATS(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("DialNATS with a bad %s: %v", c.field, err)
		}
	}
}
