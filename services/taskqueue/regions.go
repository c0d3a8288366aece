package taskqueue

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
)

// Regions: each region's task queue keeps the runs of the agents homed
// there, in its region's buckets (docs/architecture.md, "Where each fact
// lives"). A request about another region's agent is handed to that
// region's task queue (bus.Route); a request about a run by id that this
// region does not keep is asked of the other regions.

// routeRequest says which region's task queue answers a request that no
// runtime sent (homes.Directory.Routes routes those).
func (s *Service) routeRequest(ctx context.Context, op string, req *bus.Request) bus.Route {
	switch op {
	case meshapi.OpTaskCreate:
		var in struct {
			AgentID string `json:"target_agent_id"`
		}
		_ = json.Unmarshal(req.Data, &in)
		return s.homes.Route(ctx, in.AgentID)
	case meshapi.OpTaskAttachArtifact, meshapi.OpTaskList, meshapi.OpUsage:
		// A list of every agent's runs starts here (listEverywhere).
		return s.homes.RouteAgent(ctx, req.Data)
	case meshapi.OpTaskGet, meshapi.OpTaskCancel, meshapi.OpTaskContinue, meshapi.OpConversationGet,
		meshapi.OpTaskDelegateClaim, meshapi.OpTaskDelegateLink, meshapi.OpTaskDelegateProgress, meshapi.OpTaskDelegateEnd:
		// By id: answered here when this region keeps it, else by the
		// region that does.
		return s.homes.Ask()
	}
	return bus.Here
}

// leasesOp is the task queue's own endpoint for a heartbeat handed over by
// another region's task queue: a runtime connected to a region other than
// its agent's home sends its heartbeats there, and the leases they renew
// are kept in the home region.
const leasesOp = "leases"

// handOverHeartbeat passes a heartbeat about another region's agent to
// that region's task queue, and says whether it did.
// Heartbeats come from every connected runtime: only the view is looked
// at, never the store (an agent the view does not know has no leases to
// renew anywhere yet).
func (s *Service) handOverHeartbeat(msg *nats.Msg, agentID string) bool {
	home, ok := s.homes.Cached(agentID)
	if !ok || home == s.cfg.Region {
		return false
	}
	out := nats.NewMsg(bus.RegionSubject(home, bus.ServiceTaskQueue, leasesOp))
	out.Data = msg.Data
	out.Header.Set(bus.HeaderSubject, msg.Subject)
	_ = s.cfg.Conn.NC.PublishMsg(out)
	return true
}

// listEverywhere lists the runs of every region, newest first: each region
// is asked for the first offset+limit matches (ids are time-ordered, so
// the cursor means the same in every region), and the pages are merged. A
// region that cannot be asked is named in the list's UnreachableRegions,
// and its runs are missing: the list of the regions that answer goes on
// being served while another is down, and does not look complete.
func (s *Service) listEverywhere(ctx context.Context, req *bus.Request, in meshapi.ListTaskRunsRequest, others []string) (*meshapi.TaskRunList, error) {
	window := in
	window.Offset, window.Limit = 0, in.Offset+in.Limit
	body, err := json.Marshal(window)
	if err != nil {
		return nil, err
	}
	type page struct {
		region string
		list   *meshapi.TaskRunList
		err    error
	}
	pages := make(chan page, len(others)+1)
	go func() {
		l, err := s.listHere(ctx, window)
		pages <- page{s.cfg.Region, l, err}
	}()
	for _, region := range others {
		go func() {
			var l meshapi.TaskRunList
			err := bus.CallRegion(ctx, s.cfg.Conn.NC, region, bus.ServiceTaskQueue, meshapi.OpTaskList, req.Subject, body, &l)
			pages <- page{region, &l, err}
		}()
	}
	var all []mesh.TaskRun
	var unreachable []string
	more, total := false, 0
	for range len(others) + 1 {
		p := <-pages
		if p.err != nil && p.region != s.cfg.Region && bus.Unreachable(p.err) {
			unreachable = append(unreachable, p.region)
			continue
		}
		if p.err != nil {
			return nil, p.err
		}
		all = append(all, p.list.TaskRuns...)
		more = more || p.list.NextCursor != ""
		if p.list.Total != nil {
			total += *p.list.Total
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID > all[j].ID })
	if len(all) > window.Limit {
		all, more = all[:window.Limit], true
	}
	out := meshapi.TaskRunList{TaskRuns: []mesh.TaskRun{}}
	if in.Offset < len(all) {
		out.TaskRuns = all[in.Offset:]
	}
	if more && len(out.TaskRuns) > 0 {
		out.NextCursor = out.TaskRuns[len(out.TaskRuns)-1].ID
	}
	if in.WithTotal {
		out.Total = &total
	}
	if len(unreachable) > 0 {
		sort.Strings(unreachable)
		out.UnreachableRegions = unreachable
	}
	return &out, nil
}
