package main

import (
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

// addProfileFlag adds --pprof-listen to cmd and returns where its value lands.
func addProfileFlag(cmd *cobra.Command) *string {
	addr := new(string)
	cmd.Flags().StringVar(addr, "pprof-listen", "", "serve Go's runtime profiles (CPU, heap, goroutines) at http://<address>/debug/pprof/ (off unless given; they are not authenticated, so keep it on loopback)")
	return addr
}

// serveProfiles serves net/http/pprof on addr until the process ends; an
// empty addr serves nothing. The profiles are on a listener of their own,
// never on the API's, so no API route exposes them. The command line is not
// served: it may hold a URL with credentials in it.
func serveProfiles(addr string, log zerolog.Logger) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("profiles server stopped")
		}
	}()
	log.Info().Str("pprof", "http://"+ln.Addr().String()+"/debug/pprof/").Msg("serving runtime profiles")
	return nil
}
