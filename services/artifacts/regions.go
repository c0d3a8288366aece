package artifacts

import (
	"context"
	"encoding/json"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Regions: each region's artifact service keeps the artifacts of the
// agents homed there, in its region's bucket and object store, beside
// their runs (docs/architecture.md, "Where each fact lives"). A request to
// write one for another region's agent is handed to that region's service
// (bus.Route); a read by id this region does not keep is asked of the
// other regions.

// routeRequest says which region's artifact service answers a request
// that no runtime sent (homes.Directory.Routes routes those).
func (s *Service) routeRequest(ctx context.Context, op string, req *bus.Request) bus.Route {
	switch op {
	case meshapi.OpArtifactOpenInput, meshapi.OpArtifactList:
		var in struct {
			Region string `json:"region"`
		}
		_ = json.Unmarshal(req.Data, &in)
		if in.Region != "" {
			// Where the run is kept: its agent may have moved since.
			return bus.Route{Region: in.Region}
		}
		// Without the agent, this region answers: an empty list is an
		// answer, not a miss, and only this region's artifacts can be
		// listed.
		return s.homes.RouteAgent(ctx, req.Data)
	case meshapi.OpArtifactGet, meshapi.OpArtifactRead:
		return s.homes.Ask()
	}
	return bus.Here
}
