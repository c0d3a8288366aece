package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
)

// A request about something another region keeps (a run of an agent homed
// there, that agent's runtime) is handed to that region's copy of the
// service: Serve asks the spec's Route where a request belongs and relays it
// there on the region's own subject (RegionSubject), which only that
// region's copies answer. The request crosses the gateway once, and every
// JetStream operation it needs is done in the region that keeps the data.

// Route says where a request belongs.
type Route struct {
	// Region is the region whose copy of the service must answer; "" or
	// the service's own region: this copy.
	Region string
	// Ask, when Region is empty, names the other regions that may keep
	// what the request is about (a run by id that this region does not
	// keep): each is asked, and the one that has it answers.
	Ask []string
}

// Here is the route of a request this copy of a service answers.
var Here = Route{}

// RouteFunc says where a request to op belongs.
type RouteFunc func(ctx context.Context, op string, req *Request) (Route, error)

// subjRegion roots the subjects a region's copies of a service answer
// requests handed over from another region on; only platform connections
// reach them.
const subjRegion = "mesh.region"

// HeaderSubject carries, on a request handed to another region, the
// subject it first arrived on: a runtime operation's subject names the
// runtime (see Request.Runtime), and the region that answers must know it.
// Only platform connections can publish on a region's subjects, so the
// header is trusted there and nowhere else.
const HeaderSubject = "Mesh-Subject"

// RegionSubject is the subject region's copies of service answer endpoint
// on, for requests handed over from another region.
func RegionSubject(region, service, endpoint string) string {
	return subjRegion + "." + region + "." + service + "." + endpoint
}

// routed wraps h so that a request belonging to another region is relayed
// there, and its answer relayed back.
func (s *Service) routed(region, endpoint string, op string, route RouteFunc, h HandlerFunc) HandlerFunc {
	service := s.svc.Info().Name
	return func(ctx context.Context, req *Request) (any, error) {
		to, err := route(ctx, op, req)
		if err != nil {
			return nil, err
		}
		switch {
		case to.Region != "" && to.Region != region:
			return s.relay(ctx, to.Region, service, endpoint, req)
		case to.Region == "" && len(to.Ask) > 0:
			return s.ask(ctx, to.Ask, service, endpoint, req, h)
		}
		return h(ctx, req)
	}
}

// relay hands req to region's copies of service and returns their answer
// as it is.
func (s *Service) relay(ctx context.Context, region, service, endpoint string, req *Request) (any, error) {
	var answer json.RawMessage
	if err := CallRegion(ctx, s.nc, region, service, endpoint, req.Subject, req.Data, &answer); err != nil {
		return nil, err
	}
	return answer, nil
}

// CallRegion sends a request that first arrived on subject to region's
// copies of service (on their region subject, endpoint) and decodes the
// answer into out. A region none of whose copies answers, or none in time,
// is 503 UNAVAILABLE naming it (a *RegionUnreachableError), and is
// remembered as unreachable: until it answers again (see ProbeInterval),
// requests for it are refused at once, without being sent.
func CallRegion(ctx context.Context, nc *nats.Conn, region, service, endpoint, subject string, data []byte, out any) error {
	if err := refusal(nc, region); err != nil {
		return err
	}
	msg := nats.NewMsg(RegionSubject(region, service, endpoint))
	msg.Data = data
	msg.Header.Set(HeaderSubject, subject)
	err := CallMsg(ctx, nc, msg, out)
	if cause, failed := regionFailure(ctx, err); failed {
		markDown(nc, region, cause)
		return unreachableError(region, fmt.Sprintf("its %s service: %s", service, cause))
	}
	return err
}

// ask answers req here when this copy has what it is about, and otherwise
// asks each of regions: the first answer that is not NOT_FOUND is the
// answer. When none has it and a region could not be asked, the answer is
// 503 UNAVAILABLE naming it, not a NOT_FOUND that may be false.
func (s *Service) ask(ctx context.Context, regions []string, service, endpoint string, req *Request, here HandlerFunc) (any, error) {
	resp, err := here(ctx, req)
	if !errors.Is(err, mesh.ErrNotFound) {
		return resp, err
	}
	notFound := err
	type answer struct {
		region string
		resp   any
		err    error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan answer, len(regions))
	for _, region := range regions {
		go func() {
			resp, err := s.relay(ctx, region, service, endpoint, req)
			answers <- answer{region, resp, err}
		}()
	}
	var unreachable []string
	var failed error
	for range regions {
		a := <-answers
		switch {
		case a.err == nil:
			return a.resp, nil
		case errors.Is(a.err, mesh.ErrNotFound):
		case Unreachable(a.err):
			unreachable = append(unreachable, a.region)
			failed = a.err
		default:
			return nil, a.err
		}
	}
	if len(unreachable) > 0 {
		sort.Strings(unreachable)
		return nil, mesh.Errorf(mesh.CodeUnavailable, "not found in the regions that answered; region %s cannot be reached and may hold it: %s", strings.Join(unreachable, ", "), mesh.AsError(failed).Message)
	}
	return nil, notFound
}

// Unreachable reports whether a request to another region (CallRegion)
// found no answer: nothing answered there, not in time, or that region's
// copy said it cannot serve.
func Unreachable(err error) bool {
	code := mesh.AsError(err).Code
	return code == mesh.CodeUnavailable || code == mesh.CodeTimeout
}

// HandedOverSubject is the subject a message handed over from another
// region first arrived on: the header's, for a message on a region's
// subject (which only platform connections reach). On any other subject
// the header is ignored (anyone may set it) and the message's own subject
// is returned.
func HandedOverSubject(subject string, header nats.Header) string {
	if !strings.HasPrefix(subject, subjRegion+".") {
		return subject
	}
	return header.Get(HeaderSubject)
}
