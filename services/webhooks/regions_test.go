package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/internal/homes"
	"github.com/a2amesh/a2amesh/services/webhooks"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// regions is a supercluster of three regions of one server each (east the
// origin, holding the gathered log), each provisioned as a2a-platform
// serve provisions it and told to the others as a region running services.
type regions struct {
	sc    *clustertest.Supercluster
	conns map[string]*bus.Conn
}

func startRegions(t *testing.T) *regions {
	t.Helper()
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}, {Name: "south"}}})
	r := &regions{sc: sc, conns: sc.ProvisionedRegions(t, "east", "east", "west", "south")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, conn := range r.conns {
		// What each region's credentials service stores when it starts.
		recs, err := bus.OpenRecords[struct {
			Region string `json:"region"`
		}](ctx, conn.JS, bus.BucketRegions)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := recs.Put(ctx, name, &struct {
			Region string `json:"region"`
		}{name}); err != nil {
			t.Fatalf("region record of %s: %v", name, err)
		}
	}
	for name, conn := range r.conns {
		// Each region's services know the others once its copy of their
		// records has them.
		dir, err := homes.Open(ctx, conn.JS, name, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		meshtest.Eventually(t, 30*time.Second, func() bool { return len(dir.Others()) == 2 },
			func() string { return fmt.Sprintf("%s knows the regions %v, want the two others", name, dir.Others()) })
		dir.Stop()
	}
	return r
}

// startWebhooks starts the webhook service of region as a2a-platform
// serve builds it.
func (r *regions) startWebhooks(t *testing.T, region string) *webhooks.Service {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc := webhooks.New(webhooks.Config{
		Conn: r.conns[region], Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), AllowPrivate: true, Region: region,
		RetryMin: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond,
	})
	if err := svc.Start(ctx); err != nil {
		t.Fatalf("start the webhook service of %s: %v", region, err)
	}
	t.Cleanup(func() { svc.Stop(time.Second) })
	return svc
}

// publish stores one event of an agent homed in region, as that region's
// services publish it, and returns its id.
func (r *regions) publish(t *testing.T, region string, n int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := fmt.Sprintf("run-of-%s-%d", region, n)
	agent := "agent-of-" + region
	err := bus.NewPublisher(r.conns[region].JS, "test").Publish(ctx, bus.Event{
		Type: mesh.EventTaskRunProgress, Kind: mesh.KindTaskRun, AgentID: agent, Subject: run, ID: run + "-1", Sequence: 1,
		Data: mesh.TaskRun{ID: run, TargetAgentID: agent, Status: mesh.StatusRunning, Revision: 1},
	})
	if err != nil {
		t.Fatalf("publish in %s: %v", region, err)
	}
	return run + "-1"
}

// gathered says whether the origin's gathered log holds a copy of the
// event of run.
func (r *regions) gathered(region string, n int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := r.conns["east"].JS.Stream(ctx, bus.EventStream)
	if err != nil {
		return false
	}
	_, err = s.GetLastMsgForSubject(ctx, bus.EventSubject("agent-of-"+region, string(mesh.KindTaskRun), fmt.Sprintf("run-of-%s-%d", region, n)))
	return err == nil
}

// waitDelivered waits until rc accepted each of ids.
// acked waits until the webhook's consumer on stream, in region, has
// every event it delivered acknowledged.
func (r *regions) acked(t *testing.T, region, stream, webhookID string) {
	t.Helper()
	var last string
	meshtest.Eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := r.conns[region].JS.Consumer(ctx, stream, bus.WebhookConsumer(webhookID))
		if err != nil {
			last = err.Error()
			return false
		}
		info := c.CachedInfo()
		last = fmt.Sprintf("%d awaiting acknowledgement, delivered up to %d, acknowledged up to %d", info.NumAckPending, info.Delivered.Stream, info.AckFloor.Stream)
		return info.NumAckPending == 0 && info.AckFloor.Stream >= info.Delivered.Stream
	}, func() string { return "the webhook's part in " + region + ": " + last })
}

func waitDelivered(t *testing.T, rc *receiver, timeout time.Duration, ids ...string) {
	t.Helper()
	meshtest.Eventually(t, timeout, func() bool {
		got := rc.accepted()
		for _, id := range ids {
			if !slices.Contains(got, id) {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("delivered %v, want each of %v", rc.accepted(), ids) })
}

// onceEach fails unless rc accepted each of ids exactly once, and nothing else.
func onceEach(t *testing.T, rc *receiver, ids []string) {
	t.Helper()
	got := rc.accepted()
	count := map[string]int{}
	for _, id := range got {
		count[id]++
	}
	for _, id := range ids {
		if count[id] != 1 {
			t.Errorf("event %s delivered %d times, want once (delivered: %v)", id, count[id], got)
		}
		delete(count, id)
	}
	if len(count) > 0 {
		t.Errorf("delivered events never published: %v", count)
	}
}

// TestRegions_AWebhookOfEveryAgentDeliversEachRegionsEventsWhileTheOriginIsDown:
// a webhook of every agent made in west follows each region's own event
// stream. While east, the origin holding the gathered log, is down, the
// events of west and south are delivered; once east is back, its own
// events are delivered and none of the copies its gathered log took of the
// others' events is delivered again. A webhook of every agent made while
// east is down does the same with the events stored after it was made.
func TestRegions_AWebhookOfEveryAgentDeliversEachRegionsEventsWhileTheOriginIsDown(t *testing.T) {
	r := startRegions(t)
	r.startWebhooks(t, "west")
	r.startWebhooks(t, "south")
	rc := newReceiver(t, "a-secret-of-sixteen-bytes", func(int) int { return http.StatusNoContent })
	rc.failFirst = true
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wh, err := meshapi.Send(ctx, meshapi.NewClient(r.conns["west"].NC), meshapi.OpWebhooksCreate,
		meshapi.CreateWebhookRequest{URL: rc.URL, Secret: rc.secret})
	if err != nil {
		t.Fatalf("create a webhook of every agent in west: %v", err)
	}

	var ids []string
	for _, region := range []string{"east", "west", "south"} {
		ids = append(ids, r.publish(t, region, 1))
	}
	waitDelivered(t, rc, 30*time.Second, ids...)
	// A delivery's acknowledgement follows the endpoint's answer: east is
	// stopped once its part's acknowledgements are stored, as a delivery
	// whose acknowledgement is lost with its server is made again.
	r.acked(t, "east", bus.EventStream, wh.WebhookID)

	r.sc.Stop("east")
	// A webhook of every agent made in west while east is down gets the
	// events stored after it was made.
	later := newReceiver(t, "another-secret-of-sixteen-bytes", func(int) int { return http.StatusNoContent })
	if _, err := meshapi.Send(ctx, meshapi.NewClient(r.conns["west"].NC), meshapi.OpWebhooksCreate,
		meshapi.CreateWebhookRequest{URL: later.URL, Secret: later.secret}); err != nil {
		t.Fatalf("create a webhook of every agent in west while east is down: %v", err)
	}
	var during []string
	for n := 2; n <= 3; n++ {
		for _, region := range []string{"west", "south"} {
			during = append(during, r.publish(t, region, n))
		}
	}
	waitDelivered(t, rc, 30*time.Second, during...)
	waitDelivered(t, later, 30*time.Second, during...)
	ids = append(ids, during...)
	got, err := meshapi.Send(ctx, meshapi.NewClient(r.conns["west"].NC), meshapi.OpWebhooksGet, meshapi.WebhookRequest{WebhookID: wh.WebhookID})
	if err != nil {
		t.Fatalf("get the webhook while east is down: %v", err)
	}
	meshtest.Eventually(t, 30*time.Second, func() bool {
		got, err = meshapi.Send(ctx, meshapi.NewClient(r.conns["west"].NC), meshapi.OpWebhooksGet, meshapi.WebhookRequest{WebhookID: wh.WebhookID})
		return err == nil && slices.Equal(got.UnreachableRegions, []string{"east"})
	}, func() string {
		return fmt.Sprintf("webhook while east is down: %+v, %v; want east unreachable", got, err)
	})

	r.sc.Start("east")
	r.sc.WaitJetStream()
	// Once the gathered log holds the copies of every event of west and
	// south, an event of east stored after them is delivered after the
	// gathered log's part went past every copy.
	meshtest.Eventually(t, time.Minute, func() bool {
		for n := 1; n <= 3; n++ {
			if !r.gathered("west", n) || !r.gathered("south", n) {
				return false
			}
		}
		return true
	}, func() string { return "east's gathered log lacks copies of west's and south's events" })
	last := r.publish(t, "east", 2)
	ids = append(ids, last)
	waitDelivered(t, rc, time.Minute, last)
	waitDelivered(t, later, time.Minute, last)
	onceEach(t, rc, ids)
	onceEach(t, later, append(during, last))
	meshtest.Eventually(t, 30*time.Second, func() bool {
		got, err = meshapi.Send(ctx, meshapi.NewClient(r.conns["west"].NC), meshapi.OpWebhooksGet, meshapi.WebhookRequest{WebhookID: wh.WebhookID})
		return err == nil && len(got.UnreachableRegions) == 0
	}, func() string {
		return fmt.Sprintf("webhook once east is back: %+v, %v; want no region unreachable", got, err)
	})

	// Each event failed once: its delivery is recorded in the region whose
	// stream it was read from, named by that region but for the origin's.
	client := meshapi.NewClient(r.conns["west"].NC)
	list, err := meshapi.Send(ctx, client, meshapi.OpWebhooksDeliveries, meshapi.ListDeliveriesRequest{WebhookID: wh.WebhookID})
	if err != nil {
		t.Fatalf("list deliveries: %v", err)
	}
	listed := map[string]string{}
	for _, d := range list.Deliveries {
		listed[d.EventID] = d.DeliveryID
		region, _, _ := strings.Cut(strings.TrimPrefix(d.EventID, "run-of-"), "-")
		prefix, seq, found := strings.Cut(d.DeliveryID, ":")
		if region == "east" && found || region != "east" && (prefix != region || seq == "") || d.State != meshapi.DeliveryDelivered {
			t.Errorf("delivery %+v of an event of %s: want it delivered, its id the sequence prefixed by its region but for east", d, region)
		}
	}
	for _, id := range ids {
		if listed[id] == "" {
			t.Errorf("event %s failed once but its delivery is not listed (listed: %v)", id, listed)
		}
	}
	redriven, err := meshapi.Send(ctx, client, meshapi.OpWebhooksRedrive, meshapi.RedriveRequest{WebhookID: wh.WebhookID, DeliveryID: listed[ids[1]]})
	if err != nil || redriven.EventID != ids[1] || redriven.AttemptCount != 3 {
		t.Fatalf("redrive of %s: %+v, %v; want a third attempt of %s", listed[ids[1]], redriven, err, ids[1])
	}

	// Deleting the webhook deletes its consumer on every region's stream.
	if _, err := meshapi.Send(ctx, client, meshapi.OpWebhooksDelete, meshapi.WebhookRequest{WebhookID: wh.WebhookID}); err != nil {
		t.Fatalf("delete the webhook: %v", err)
	}
	for _, stream := range []string{bus.EventStream, bus.RegionEventStream("west"), bus.RegionEventStream("south")} {
		if _, err := r.conns["west"].JS.Consumer(ctx, stream, bus.WebhookConsumer(wh.WebhookID)); !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Errorf("consumer on %s after the webhook was deleted: %v, want none", stream, err)
		}
	}
}

// TestRegions_AWebhookOfEveryAgentMadeBeforeMovesToEachRegionsStreamWithoutLosingOrRepeatingEvents:
// a webhook of every agent as versions before kept it (one consumer on the
// gathered log) is moved to each region's stream when the service starts,
// while events are published in every region: each is delivered once,
// those of west and south while east is down.
func TestRegions_AWebhookOfEveryAgentMadeBeforeMovesToEachRegionsStreamWithoutLosingOrRepeatingEvents(t *testing.T) {
	r := startRegions(t)
	rc := newReceiver(t, "a-secret-of-sixteen-bytes", func(int) int { return http.StatusNoContent })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type earlier struct {
		ID        string    `json:"webhook_id"`
		URL       string    `json:"url"`
		Secret    string    `json:"secret"`
		Standard  bool      `json:"standard_webhooks"`
		CreatedAt time.Time `json:"created_at"`
		Parts     []struct {
			Region string `json:"region"`
			From   uint64 `json:"from"`
		} `json:"parts"`
	}
	id := mesh.NewID()
	if _, err := r.conns["west"].JS.CreateOrUpdateConsumer(ctx, bus.EventStream, jetstream.ConsumerConfig{
		Durable: bus.WebhookConsumer(id), Description: "webhook " + id, FilterSubjects: bus.EventStreamSubjects(),
		DeliverPolicy: jetstream.DeliverNewPolicy, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Second,
		MaxAckPending: 1, MaxDeliver: -1,
	}); err != nil {
		t.Fatal(err)
	}
	subs, err := bus.OpenRecords[earlier](ctx, r.conns["west"].JS, bus.BucketWebhooks)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := subs.Create(ctx, id, &earlier{ID: id, URL: rc.URL, Secret: rc.secret, Standard: true, CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	n := 0
	publishAll := func() {
		n++
		for _, region := range []string{"east", "west", "south"} {
			ids = append(ids, r.publish(t, region, n))
		}
	}
	publishAll() // before the service starts
	r.startWebhooks(t, "west")
	r.startWebhooks(t, "south")
	for range 3 { // while it moves the webhook
		publishAll()
	}
	meshtest.Eventually(t, time.Minute, func() bool {
		sub, _, err := subs.Latest(ctx, id)
		if err != nil || len(sub.Parts) != 2 {
			return false
		}
		for _, p := range sub.Parts {
			if p.From == 0 {
				return false
			}
		}
		return true
	}, func() string { return "the webhook has no part on the streams of west and south" })
	waitDelivered(t, rc, time.Minute, ids...)
	r.acked(t, "east", bus.EventStream, id)

	r.sc.Stop("east")
	var during []string
	for _, region := range []string{"west", "south"} {
		during = append(during, r.publish(t, region, n+1))
	}
	waitDelivered(t, rc, 30*time.Second, during...)
	ids = append(ids, during...)

	r.sc.Start("east")
	r.sc.WaitJetStream()
	meshtest.Eventually(t, time.Minute, func() bool {
		for i := 1; i <= n+1; i++ {
			if !r.gathered("west", i) || !r.gathered("south", i) {
				return false
			}
		}
		return true
	}, func() string { return "east's gathered log lacks copies of west's and south's events" })
	last := r.publish(t, "east", n+2)
	ids = append(ids, last)
	waitDelivered(t, rc, time.Minute, last)
	onceEach(t, rc, ids)
}
