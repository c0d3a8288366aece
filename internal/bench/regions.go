package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/freeport"
	"github.com/a2amesh/a2amesh/internal/testkit/tcplink"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// The regions of the regions phase: the agents live in home (the origin,
// which starts first), the other is where tasks come from or where a
// runtime ends up; the last case's agent lives in the other.
const (
	regionHome  = "west"
	regionOther = "east"
)

// RegionsReport is dispatch and completion latency across two regions,
// each a NATS cluster of one node with every service, joined by gateways
// whose links add a delay.
type RegionsReport struct {
	// Delay is added to every gateway link, each way.
	Delay   string        `json:"gateway_link_delay"`
	Samples int           `json:"samples"`
	Cases   []RegionsCase `json:"cases"`
}

// RegionsCase is one way a task meets its agent across regions.
type RegionsCase struct {
	Name string `json:"case"`
	// Home is the agent's home region; CreatedIn the region whose services
	// create the task (and see it complete); RuntimeIn the region whose
	// server the agent's runtime is connected to.
	Home      string `json:"home_region"`
	CreatedIn string `json:"created_in"`
	RuntimeIn string `json:"runtime_connected_in"`
	// Dispatch is task created -> adapter receives it; Completion is task
	// created -> its completed event reaches the creator's region.
	Dispatch   Summary `json:"dispatch_latency"`
	Completion Summary `json:"completion_latency"`
	// GatewayMsgsPerTask is how many messages of the platform's accounts
	// crossed a gateway per task, from the servers' account statistics.
	GatewayMsgsPerTask float64 `json:"gateway_messages_per_task"`
}

// regionsSetup is what a case is measured on: a region's services'
// connection and its runtimes' URL, by region.
type regionsSetup struct {
	conn     map[string]*bus.Conn
	natsURL  map[string]string
	httpAddr map[string]string
	servers  []*embedded.Server
	services []*platform.Running
	links    []*tcplink.Link
}

func (r *Report) measureRegions(ctx context.Context, dir string, cfg Config) error {
	cfg.Progress(fmt.Sprintf("regions: starting %s and %s, %s added on each gateway link", regionHome, regionOther, cfg.RegionDelay))
	s, err := startRegions(ctx, dir, cfg.RegionDelay)
	defer s.stop()
	if err != nil {
		return err
	}
	rep := &RegionsReport{Delay: cfg.RegionDelay.String(), Samples: cfg.RegionSamples}
	for _, c := range []RegionsCase{
		{Name: "local agent", Home: regionHome, CreatedIn: regionHome, RuntimeIn: regionHome},
		{Name: "remote agent (task created in another region)", Home: regionHome, CreatedIn: regionOther, RuntimeIn: regionHome},
		{Name: "runtime connected to another region", Home: regionHome, CreatedIn: regionHome, RuntimeIn: regionOther},
		// Its events are stored in its region, and sourced into the
		// origin's gathered log: the only messages that cross.
		{Name: "local agent, homed outside the origin", Home: regionOther, CreatedIn: regionOther, RuntimeIn: regionOther},
	} {
		cfg.Progress(fmt.Sprintf("regions: %s, %d tasks one at a time", c.Name, cfg.RegionSamples))
		if err := s.measure(ctx, &c, filepath.Join(dir, "work-"+c.Home+"-"+c.CreatedIn+"-"+c.RuntimeIn), cfg.RegionSamples); err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		rep.Cases = append(rep.Cases, c)
	}
	r.Regions = rep
	return nil
}

// measure sends samples tasks one at a time to a new agent homed in
// c.Home, created in c.CreatedIn, with its runtime on c.RuntimeIn.
func (s *regionsSetup) measure(ctx context.Context, c *RegionsCase, workdir string, samples int) error {
	tg := target{conn: s.conn[c.CreatedIn], natsURL: s.natsURL[c.RuntimeIn], httpAddr: s.httpAddr[c.CreatedIn], home: c.Home}
	rig, err := newE2ERig(ctx, tg, 1, workdir)
	if err != nil {
		return err
	}
	defer rig.close()
	// The first tasks warm the paths up (interest crossing the gateways).
	if err := rig.sequential(ctx, 5); err != nil {
		return err
	}
	rig.dispatch, rig.endToEnd = &latencies{}, &latencies{}
	before := s.gatewayMsgs()
	if err := rig.sequential(ctx, samples); err != nil {
		return err
	}
	c.GatewayMsgsPerTask = float64(s.gatewayMsgs()-before) / float64(samples)
	c.Dispatch, c.Completion = rig.dispatch.summary(), rig.endToEnd.summary()
	return nil
}

// gatewayMsgs counts the messages of the platform's accounts every server
// sent over gateways.
func (s *regionsSetup) gatewayMsgs() int64 {
	var n int64
	for _, srv := range s.servers {
		stz, err := srv.NATS().AccountStatz(&server.AccountStatzOptions{
			Accounts: []string{bus.AccountPlatform, bus.AccountRuntimes}, IncludeUnused: true,
		})
		if err != nil {
			continue
		}
		for _, a := range stz.Accounts {
			if a.Sent.Gateways != nil {
				n += a.Sent.Gateways.Msgs
			}
		}
	}
	return n
}

// startRegions starts the two regions' servers, joined by gateways through
// links with the delay, and every service in each region, as `serve`
// runs them against that region's server.
func startRegions(ctx context.Context, dir string, delay time.Duration) (s *regionsSetup, err error) {
	s = &regionsSetup{conn: map[string]*bus.Conn{}, natsURL: map[string]string{}, httpAddr: map[string]string{}}
	user := bus.NATSUser{User: "mesh-service", Password: secret.NewToken("mesh")}
	issuerSeedFile, issuerPub, err := writeIssuerSeed(dir)
	if err != nil {
		return s, err
	}
	accounts := bus.AccountsConfig{Services: user, AuthIssuer: issuerPub}.Render()
	regions := []string{regionHome, regionOther}
	gatewayAddr := map[string]string{}
	for _, name := range regions {
		if gatewayAddr[name], err = freeport.Addr(); err != nil {
			return s, err
		}
	}
	for _, name := range regions {
		gateways := map[string][]string{}
		for _, other := range regions {
			if other == name {
				continue
			}
			// Each region reaches the other through a link of its own.
			l, err := tcplink.New()
			if err != nil {
				return s, err
			}
			l.SetTarget(gatewayAddr[other])
			l.SetDelay(delay)
			s.links = append(s.links, l)
			gateways[other] = []string{"nats://" + l.Addr()}
		}
		client, err := freeport.Addr()
		if err != nil {
			return s, err
		}
		route, err := freeport.Addr()
		if err != nil {
			return s, err
		}
		srv, err := embedded.Start(embedded.Config{
			StoreDir: filepath.Join(dir, name), Listen: client, Accounts: accounts, ServerName: name + "-1",
			ClusterName: name, ClusterListen: route, Routes: []string{"nats-route://" + route},
			// An address no one listens on: the other region must keep to the link.
			GatewayListen: gatewayAddr[name], GatewayAdvertise: "127.0.0.1:1", Gateways: gateways,
			Logger: zerolog.Nop(),
		})
		if err != nil {
			return s, fmt.Errorf("region %s: %w", name, err)
		}
		s.servers = append(s.servers, srv)
		s.natsURL[name] = srv.ClientURL()
	}
	for _, name := range regions {
		if err := s.serveRegion(ctx, dir, name, user, issuerSeedFile); err != nil {
			return s, err
		}
	}
	return s, nil
}

// serveRegion starts every service of one region against its server, the
// gateway first.
func (s *regionsSetup) serveRegion(ctx context.Context, dir, name string, user bus.NATSUser, issuerSeedFile string) error {
	var gatewayHTTP string
	for _, svc := range append([]string{"gateway"}, platform.Services...) {
		if svc == "gateway" && gatewayHTTP != "" {
			continue
		}
		sc := platform.ServeConfig{
			Config: platform.Config{
				DataDir: filepath.Join(dir, name+"-"+svc), HTTPAddr: "127.0.0.1:0", ShutdownGrace: 2 * time.Second, Logger: zerolog.Nop(),
				NATSAdvertise: s.natsURL[name],
			},
			Service: svc, NATSURL: s.natsURL[name], NATSUser: user.User, NATSPassword: user.Password,
			AuthIssuerSeedFile: issuerSeedFile, GatewayURL: "http://" + gatewayHTTP,
		}
		run, err := platform.Serve(ctx, sc)
		if err != nil {
			return fmt.Errorf("serve %s in %s: %w", svc, name, err)
		}
		s.services = append(s.services, run)
		if svc == "gateway" {
			gatewayHTTP = run.HTTPAddr()
		}
		if run.Region() != name {
			return fmt.Errorf("%s in %s serves region %q", svc, name, run.Region())
		}
	}
	s.httpAddr[name] = gatewayHTTP
	conn, err := bus.Connect(ctx, bus.ConnConfig{URL: s.natsURL[name], User: user.User, Password: user.Password, Name: "a2a-platform bench in " + name})
	if err != nil {
		return err
	}
	s.conn[name] = conn
	return nil
}

func (s *regionsSetup) stop() {
	if s == nil {
		return
	}
	for _, c := range s.conn {
		c.Drain(time.Second)
	}
	for i := len(s.services) - 1; i >= 0; i-- {
		s.services[i].Stop()
	}
	for _, srv := range s.servers {
		srv.Shutdown()
	}
	for _, l := range s.links {
		l.Close()
	}
}
