package taskqueue

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
)

// Regions: each region's task queue keeps the runs of the agents homed
// there, in its region's buckets (docs/architecture.md, "Where each fact
// lives"). A request about another region's agent is handed to that
// region's task queue (bus.Route); a request about a run by id that this
// region does not keep is asked of the other regions.

// routeRequest says which region's task queue answers a request.
func (s *Service) routeRequest(_ context.Context, op string, req *bus.Request) (bus.Route, error) {
	if agentID, _, err := req.Runtime(); err == nil {
		return s.homeOf(agentID), nil
	}
	switch op {
	case meshapi.OpTaskCreate:
		var in struct {
			AgentID string `json:"target_agent_id"`
		}
		_ = json.Unmarshal(req.Data, &in)
		return s.homeOf(in.AgentID), nil
	case meshapi.OpTaskAttachArtifact:
		var in struct {
			AgentID string `json:"agent_id"`
		}
		_ = json.Unmarshal(req.Data, &in)
		return s.homeOf(in.AgentID), nil
	case meshapi.OpTaskList:
		var in struct {
			AgentID string `json:"agent_id"`
		}
		_ = json.Unmarshal(req.Data, &in)
		if in.AgentID != "" {
			return s.homeOf(in.AgentID), nil
		}
		return bus.Here, nil
	case meshapi.OpTaskGet, meshapi.OpTaskCancel, meshapi.OpTaskContinue, meshapi.OpConversationGet,
		meshapi.OpTaskDelegateClaim, meshapi.OpTaskDelegateLink, meshapi.OpTaskDelegateProgress, meshapi.OpTaskDelegateEnd:
		// By id: answered here when this region keeps it, else by the
		// region that does.
		return bus.Route{Ask: s.otherRegions()}, nil
	}
	return bus.Here, nil
}

// homeOf routes to an agent's home region; an agent this region does not
// know (yet) is answered here, which says what is wrong with it.
func (s *Service) homeOf(agentID string) bus.Route {
	if a, ok := s.agents.Get(agentID); ok && a.HomeRegion != "" {
		return bus.Route{Region: a.HomeRegion}
	}
	return bus.Here
}

// regionsTTL is how long the list of regions is kept between two looks at
// the agents view.
const regionsTTL = time.Second

// regionList is the regions agents are homed in, looked up again at most
// once per regionsTTL.
type regionList struct {
	mu    sync.Mutex
	at    time.Time
	names []string
}

// otherRegions names the regions other than this one where agents are
// homed: those that may keep runs.
func (s *Service) otherRegions() []string {
	l := &s.regions
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.at) < regionsTTL {
		return l.names
	}
	seen := map[string]bool{}
	s.agents.Range(func(_ string, a *agentView) bool {
		if a.HomeRegion != "" && a.HomeRegion != s.cfg.Region {
			seen[a.HomeRegion] = true
		}
		return true
	})
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	l.at, l.names = time.Now(), names
	return names
}

// leasesOp is the task queue's own endpoint for a heartbeat handed over by
// another region's task queue: a runtime connected to a region other than
// its agent's home sends its heartbeats there, and the leases they renew
// are kept in the home region.
const leasesOp = "leases"

// handOverHeartbeat passes a heartbeat about another region's agent to
// that region's task queue, and says whether it did.
func (s *Service) handOverHeartbeat(msg *nats.Msg, agentID string) bool {
	to := s.homeOf(agentID)
	if to.Region == "" || to.Region == s.cfg.Region {
		return false
	}
	out := nats.NewMsg(bus.RegionSubject(to.Region, bus.ServiceTaskQueue, leasesOp))
	out.Data = msg.Data
	out.Header.Set(bus.HeaderSubject, msg.Subject)
	_ = s.cfg.Conn.NC.PublishMsg(out)
	return true
}
