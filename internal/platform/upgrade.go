package platform

import (
	"context"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/rs/zerolog"
)

// UpgradeConfig says how `a2a-platform upgrade` reaches the deployment:
// as a platform service does (ServeConfig's NATS fields).
type UpgradeConfig struct {
	// NATSURL is one or more comma-separated URLs of any region's servers.
	NATSURL string
	// NATSUser and NATSPassword, or NATSNkeySeedFile, authenticate as the
	// platform's services. NATSUser defaults to bus.DefaultServiceUser.
	NATSUser, NATSPassword string
	NATSNkeySeedFile       string
	Logger                 zerolog.Logger
}

// Validate checks that the deployment can be reached.
func (c *UpgradeConfig) Validate() error {
	if c.NATSURL == "" {
		return &SettingError{Field: "NATSURL", Value: `""`, Reason: "the URL of a region's NATS servers is required"}
	}
	return nil
}

// Upgrade moves the deployment's global records to records owned per
// region (bus.Upgrade) and returns what it did, one line a step: none when
// there was nothing left to do.
func Upgrade(ctx context.Context, cfg UpgradeConfig) ([]string, error) {
	if cfg.NATSUser == "" {
		cfg.NATSUser = bus.DefaultServiceUser
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cc := bus.ConnConfig{URL: cfg.NATSURL, Name: "a2a-platform upgrade", Logger: cfg.Logger}
	if cfg.NATSNkeySeedFile != "" {
		kp, err := readSeed(cfg.NATSNkeySeedFile, "service nkey seed")
		if err != nil {
			return nil, err
		}
		cc.Nkey = kp
	} else {
		cc.User, cc.Password = cfg.NATSUser, cfg.NATSPassword
	}
	conn, err := bus.Connect(ctx, cc)
	if err != nil {
		return nil, err
	}
	defer conn.NC.Close()
	return bus.Upgrade(ctx, conn.JS)
}
