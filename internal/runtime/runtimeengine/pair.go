package runtimeengine

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/sealed"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// ErrPlatformUnreachable: nothing answered at the API base pairing was given.
var ErrPlatformUnreachable = errors.New("nothing answers")

// PairRequest is what `a2a-runtime pair` knows.
type PairRequest struct {
	Code               string
	APIBase            string
	LocalAgentEndpoint string
	DeviceName         string
	LocalExecutor      profile.LocalExecutor
}

// Pair redeems a pairing code and returns the profile to store. The returned
// profile holds the runtime credential: it must only be written to the
// profile file.
func Pair(ctx context.Context, req PairRequest) (profile.Profile, error) {
	api, err := restclient.New(req.APIBase, restclient.WithUserAgent("a2a-runtime"))
	if err != nil {
		return profile.Profile{}, err
	}
	// The sealing key pair is made here, on the user's machine: the public
	// half is registered with the credential, the private half goes to the
	// profile only.
	sealingPublic, sealingSeed, err := sealed.NewKey()
	if err != nil {
		return profile.Profile{}, err
	}
	body := meshapi.AttachRequest{
		PairingToken: req.Code,
		DeviceName:   req.DeviceName,
		SealingKey:   sealingPublic,
		LocalExecutor: mesh.LocalExecutor{
			Type: req.LocalExecutor.Type, Ref: req.LocalExecutor.Ref, Workspace: req.LocalExecutor.Workspace,
			Cwd: req.LocalExecutor.Cwd, InstructionFile: req.LocalExecutor.InstructionFile,
		},
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := meshapi.Send(ctx, api, meshapi.OpPairingAttachRuntime, body)
	if err != nil {
		// An error of the request itself, not an answer: nothing listens
		// there, or nothing answered in time.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			return profile.Profile{}, fmt.Errorf("pairing failed: %w at %s (%v)", ErrPlatformUnreachable, api.Base(), ue.Err)
		}
		return profile.Profile{}, fmt.Errorf("pairing with %s failed: %w", req.APIBase, err)
	}
	endpoint := req.LocalAgentEndpoint
	if endpoint == "" {
		endpoint = adapterapi.DefaultEndpoint
	}
	return profile.Profile{
		AgentID:            res.AgentID,
		RuntimeID:          res.RuntimeID,
		RuntimeToken:       res.RuntimeToken,
		SealingKey:         sealingSeed,
		APIBase:            api.Base(),
		LocalAgentEndpoint: endpoint,
		Adapter:            profile.DefaultAdapter,
		HeartbeatTimeoutMS: res.HeartbeatTimeoutMS,
		LeaseMS:            res.LeaseMS,
		LocalExecutor:      req.LocalExecutor,
		DeviceName:         req.DeviceName,
		PairedAt:           time.Now().UTC(),
		Platform:           adapterapi.Platform{Name: res.Platform.Name, Origin: res.Platform.Origin},
		NATS:               profileNATS(res.NATS),
	}, nil
}

// profileNATS is what the profile keeps of the platform's NATS details.
func profileNATS(n meshapi.NATSConnection) profile.NATS {
	return profile.NATS{URL: n.URL, WSURL: n.WSURL, Region: n.Region, Fallbacks: fallbacks(n.Fallbacks), InboxPrefix: n.InboxPrefix}
}

func fallbacks(regions []meshapi.NATSRegion) []profile.NATSRegion {
	var out []profile.NATSRegion
	for _, r := range regions {
		out = append(out, profile.NATSRegion{Region: r.Region, URL: r.URL, WSURL: r.WSURL})
	}
	return out
}
