// Package mesh holds the records, states, error codes and event types that every
// A2A Mesh service, front end and program agrees on. It has no behaviour beyond
// validation and the task-run state machine, so any package may import it without
// pulling in a service.
package mesh
