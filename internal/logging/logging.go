// Package logging builds the zerolog loggers of the three programs: JSON lines
// by default, a human-readable console when writing to a terminal.
package logging

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// Config configures a logger.
type Config struct {
	// Level is trace, debug, info, warn or error. Default info.
	Level string
	// Output defaults to stderr.
	Output io.Writer
	// Console forces the console format; by default it is used when Output is
	// a terminal.
	Console bool
	// Component is added to every line as "component".
	Component string
}

// New returns a logger for cfg.
func New(cfg Config) (zerolog.Logger, error) {
	out := cfg.Output
	if out == nil {
		out = os.Stderr
	}
	level := zerolog.InfoLevel
	if cfg.Level != "" {
		l, err := zerolog.ParseLevel(strings.ToLower(cfg.Level))
		if err != nil || l == zerolog.NoLevel {
			return zerolog.Nop(), fmt.Errorf("unknown log level %q (use trace, debug, info, warn or error)", cfg.Level)
		}
		level = l
	}
	if cfg.Console || isTerminal(out) {
		out = zerolog.ConsoleWriter{Out: out, TimeFormat: time.TimeOnly}
	}
	logger := zerolog.New(out).Level(level).With().Timestamp().Logger()
	if cfg.Component != "" {
		logger = logger.With().Str("component", cfg.Component).Logger()
	}
	return logger, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
