package platform

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// MaxReplicas is the most replicas JetStream keeps of a stream.
const MaxReplicas = 5

// SettingError is a setting a platform cannot run with. Field names the
// Config (or ServeConfig) field, so a program can name the flag or
// variable that filled it.
type SettingError struct {
	Field  string
	Value  any
	Reason string
}

func (e *SettingError) Error() string {
	return fmt.Sprintf("platform: %s %v: %s", e.Field, e.Value, e.Reason)
}

// Validate checks every setting once the defaults are in: a duration or a
// count the services would misuse (a ticker of a negative interval, a
// bucket of no replicas) is an error naming it, before anything starts.
// Up and Serve call it.
func (c *Config) Validate() error {
	positive := func(d time.Duration) bool { return d > 0 }
	errs := checkDurations(positive, "must be a positive duration (0 takes the default)", []durationSetting{
		{"HeartbeatTimeout", c.HeartbeatTimeout},
		{"Lease", c.Lease},
		{"PairingCodeTTL", c.PairingCodeTTL},
		{"EventRetention", c.EventRetention},
		{"ShutdownGrace", c.ShutdownGrace},
		{"A2ABlockingWait", c.A2ABlockingWait},
	})
	notNegative := func(d time.Duration) bool { return d >= 0 }
	errs = append(errs, checkDurations(notNegative, "must not be negative", []durationSetting{
		{"A2AOfflineWait", c.A2AOfflineWait},
		{"WebhookAttemptTimeout", c.WebhookAttemptTimeout},
		{"WebhookRetryMin", c.WebhookRetryMin},
		{"WebhookRetryMax", c.WebhookRetryMax},
		{"WebhookRetryFor", c.WebhookRetryFor},
	})...)
	if c.MaxArtifactBytes <= 0 {
		errs = append(errs, &SettingError{Field: "MaxArtifactBytes", Value: c.MaxArtifactBytes, Reason: "must be a positive number of bytes (0 takes the default)"})
	}
	if c.A2ARateLimitPerMinute <= 0 {
		errs = append(errs, &SettingError{Field: "A2ARateLimitPerMinute", Value: c.A2ARateLimitPerMinute, Reason: "must be a positive number of requests (0 takes the default)"})
	}
	if c.DelegationMaxDepth <= 0 {
		errs = append(errs, &SettingError{Field: "DelegationMaxDepth", Value: c.DelegationMaxDepth, Reason: "must be a positive number of agents (0 takes the default)"})
	}
	if c.Replicas < 0 || c.Replicas > MaxReplicas {
		errs = append(errs, &SettingError{Field: "Replicas", Value: c.Replicas, Reason: fmt.Sprintf("must be from 1 to %d (0 takes 1)", MaxReplicas)})
	}
	if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, &SettingError{Field: "PublicURL", Value: c.PublicURL, Reason: "must be an http:// or https:// URL with a host"})
	}
	return errors.Join(errs...)
}

// durationSetting is a duration field of Config, by name, and its value.
type durationSetting struct {
	field string
	d     time.Duration
}

// checkDurations is a SettingError, with reason, for each of settings
// whose value ok refuses, in order.
func checkDurations(ok func(time.Duration) bool, reason string, settings []durationSetting) []error {
	var errs []error
	for _, s := range settings {
		if !ok(s.d) {
			errs = append(errs, &SettingError{Field: s.field, Value: s.d, Reason: reason})
		}
	}
	return errs
}

// Validate checks the platform's settings and those of one service
// process. Serve calls it.
func (c *ServeConfig) Validate() error {
	var errs []error
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	if !slices.Contains(Services, c.Service) {
		errs = append(errs, &SettingError{Field: "Service", Value: c.Service, Reason: "must be one of " + strings.Join(Services, ", ")})
	}
	if strings.TrimSpace(c.NATSURL) == "" {
		errs = append(errs, &SettingError{Field: "NATSURL", Value: `""`, Reason: "is required: the NATS deployment to serve on"})
	}
	if c.OriginRegion != "" {
		if err := bus.ValidRegion(c.OriginRegion); err != nil {
			errs = append(errs, &SettingError{Field: "OriginRegion", Value: c.OriginRegion, Reason: err.Error()})
		}
	}
	return errors.Join(errs...)
}
