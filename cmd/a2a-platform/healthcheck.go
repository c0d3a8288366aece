package main

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// defaultHealthURL is where the container image's HEALTHCHECK asks: the
// API of `up` and `serve gateway` on the container's own loopback.
const defaultHealthURL = "http://127.0.0.1:3000/healthz"

// newHealthcheck is `a2a-platform healthcheck`: the container image is
// distroless, with no curl or wget, so its HEALTHCHECK asks with this.
func newHealthcheck() *cobra.Command {
	var url string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if the platform's health URL answers 200, 1 otherwise (the container image's HEALTHCHECK)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return checkHealth(cmd, url, timeout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", defaultHealthURL, "URL to ask: /healthz of the HTTP API, or of --metrics-listen for a serve process without one")
	f.DurationVar(&timeout, "timeout", 5*time.Second, "longest wait for the answer")
	return cmd
}

// checkHealth GETs url and returns an error unless it answers 200.
func checkHealth(cmd *cobra.Command, url string, timeout time.Duration) error {
	req, err := http.NewRequestWithContext(cmd.Context(), http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	client := &http.Client{Timeout: timeout}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", url, resp.Status)
	}
	return nil
}
