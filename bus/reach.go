package bus

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A request handed to another region (CallRegion) that finds nothing
// answering there, or no answer in time, marks that region unreachable for
// the connection: the next requests for it are refused at once, without
// waiting out a timeout each, while a probe asks the region in the
// background every ProbeInterval. The first answer to a probe forgets it.

// ProbeInterval is how often a region remembered as unreachable is asked
// whether it answers again.
const ProbeInterval = time.Second

// probeTimeout bounds one probe of a region.
const probeTimeout = 2 * time.Second

// HeaderUnreachableRegion, on a service's error answer, names the region
// the request needed and could not reach: the caller may not retry it
// sooner than the region answers again (CallIdempotent does not).
const HeaderUnreachableRegion = "Mesh-Unreachable-Region"

// RegionUnreachableError is the answer to a request for another region
// that cannot be reached (503 UNAVAILABLE, naming it).
type RegionUnreachableError struct {
	Region string
	Err    *mesh.Error
}

func (e *RegionUnreachableError) Error() string { return e.Err.Error() }

// Unwrap gives the *mesh.Error, for mesh.AsError and errors.Is.
func (e *RegionUnreachableError) Unwrap() error { return e.Err }

// regionDown is a region remembered unreachable by a connection.
type regionDown struct {
	since time.Time
	cause string
}

// reach is what one connection remembers of the regions it could not reach.
type reach struct {
	mu   sync.Mutex
	down map[string]regionDown
}

// reaches holds each connection's reach.
var reaches sync.Map // *nats.Conn -> *reach

func reachOf(nc *nats.Conn) *reach {
	r, _ := reaches.LoadOrStore(nc, &reach{down: map[string]regionDown{}})
	return r.(*reach)
}

// forgetReach drops what nc remembers of unreachable regions, when nc is
// closed for good.
func forgetReach(nc *nats.Conn) { reaches.Delete(nc) }

// UnreachableRegions lists, sorted, the regions nc remembers as
// unreachable.
func UnreachableRegions(nc *nats.Conn) []string {
	r, ok := reaches.Load(nc)
	if !ok {
		return nil
	}
	rr := r.(*reach)
	rr.mu.Lock()
	defer rr.mu.Unlock()
	names := make([]string, 0, len(rr.down))
	for name := range rr.down {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// refusal is the error of a request for a region nc remembers as
// unreachable, or nil.
func refusal(nc *nats.Conn, region string) error {
	r, ok := reaches.Load(nc)
	if !ok {
		return nil
	}
	rr := r.(*reach)
	rr.mu.Lock()
	d, down := rr.down[region]
	rr.mu.Unlock()
	if !down {
		return nil
	}
	return unreachableError(region, fmt.Sprintf("%s since %s; it is asked again every %s", d.cause, d.since.UTC().Format(time.RFC3339), ProbeInterval))
}

func unreachableError(region, why string) *RegionUnreachableError {
	return &RegionUnreachableError{Region: region,
		Err: mesh.Errorf(mesh.CodeUnavailable, "region %s cannot be reached (%s); send it again later", region, why)}
}

// markDown remembers region as unreachable by nc and, unless it was
// already, probes it until it answers.
func markDown(nc *nats.Conn, region, cause string) {
	rr := reachOf(nc)
	rr.mu.Lock()
	_, already := rr.down[region]
	if !already {
		rr.down[region] = regionDown{since: time.Now(), cause: cause}
	}
	rr.mu.Unlock()
	if !already {
		go rr.probe(nc, region)
	}
}

// probe asks region every ProbeInterval whether it answers, and forgets it
// once it does (or when nc is closed).
func (rr *reach) probe(nc *nats.Conn, region string) {
	t := time.NewTicker(ProbeInterval)
	defer t.Stop()
	for !nc.IsClosed() {
		if regionAnswers(nc, region) {
			rr.mu.Lock()
			delete(rr.down, region)
			rr.mu.Unlock()
			return
		}
		<-t.C
	}
}

// regionAnswers reports whether region's servers answer: its event stream
// (placed there, answered by its own leader) tells its state.
func regionAnswers(nc *nats.Conn, region string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		return false
	}
	stream, err := EventStreamIn(ctx, js, region)
	if err != nil {
		return false
	}
	_, err = js.Stream(ctx, stream)
	return err == nil
}

// regionFailure says whether err, the outcome of a request to region's
// copies of a service, means the region cannot be reached (nothing
// answered there, or nothing in time) and if so why; an answer of the
// region's own, even an error, is not.
func regionFailure(ctx context.Context, err error) (string, bool) {
	switch {
	case err == nil:
		return "", false
	case errors.Is(err, nats.ErrNoResponders):
		return "nothing answers there", true
	case errors.Is(err, mesh.ErrTimeout) && ctx.Err() != nil:
		return "no answer in time", true
	}
	return "", false
}
