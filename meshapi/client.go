package meshapi

import (
	"context"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
)

// Client calls the platform's services over the bus.
type Client struct {
	nc *nats.Conn
}

// NewClient returns a client on nc.
func NewClient(nc *nats.Conn) *Client { return &Client{nc: nc} }

func (c *Client) call(ctx context.Context, service, op string, req, resp any) error {
	return bus.Call(ctx, c.nc, bus.ServiceSubject(service, op), req, resp)
}

// runOf is the run an operation answered with.
func runOf(r *TaskRunReply, err error) (*mesh.TaskRun, error) {
	if err != nil {
		return nil, err
	}
	return &r.TaskRun, nil
}
