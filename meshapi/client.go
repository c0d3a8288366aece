package meshapi

import (
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
)

// Client sends the operations of the table (Send) to the platform's
// services, each on its service subject.
type Client struct {
	nc *nats.Conn
}

// NewClient returns a client on nc.
func NewClient(nc *nats.Conn) *Client { return &Client{nc: nc} }

// runOf is the run an operation answered with.
func runOf(r *TaskRunReply, err error) (*mesh.TaskRun, error) {
	if err != nil {
		return nil, err
	}
	return &r.TaskRun, nil
}
