package webhooks

import "github.com/a2amesh/a2amesh/internal/tracing"

var tracer = tracing.Tracer("webhooks")
