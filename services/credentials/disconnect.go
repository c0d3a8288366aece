package credentials

import (
	"context"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// lateAdmission is how long after a revocation a connection admitted just
// before it may still be registering with its server (the auth callout read
// the credential before it was deleted): a second sweep closes it too.
const lateAdmission = 3 * time.Second

// disconnect closes the open connections of a credential that was just
// revoked, replaced or deleted, on every server, without holding up the
// request that ended it. The credential is already gone, so a connection
// that comes back is refused by the auth callout.
func (s *Service) disconnect(account, user string) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.closeConnections(account, user)
		select {
		case <-time.After(lateAdmission):
			s.closeConnections(account, user)
		case <-s.stop:
		}
	}()
}

func (s *Service) closeConnections(account, user string) {
	ctx, cancel := context.WithTimeout(context.Background(), bus.DefaultCallTimeout)
	defer cancel()
	n, err := bus.DisconnectUser(ctx, s.cfg.Conn.NC, account, user)
	if err != nil {
		s.cfg.Logger.Error().Err(err).Str("user", user).Msg("connections of an ended credential not closed")
		return
	}
	if n > 0 {
		s.cfg.Logger.Info().Str("user", user).Int("connections", n).Msg("closed the connections of an ended credential")
	}
}
