package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// connzPage is how many connections one server lists per answer.
const connzPage = 1024

// serverGather is how long to wait for more servers once one has answered:
// servers of a cluster answer within milliseconds of each other.
const serverGather = 150 * time.Millisecond

type connzRequest struct {
	Account  string `json:"acc"`
	Username bool   `json:"auth"`
	Offset   int    `json:"offset"`
	Limit    int    `json:"limit"`
}

type connzAnswer struct {
	Server struct {
		ID string `json:"id"`
	} `json:"server"`
	Data *struct {
		Conns []struct {
			Cid            uint64 `json:"cid"`
			AuthorizedUser string `json:"authorized_user"`
		} `json:"connections"`
	} `json:"data"`
	Error *struct {
		Description string `json:"description"`
	} `json:"error"`
}

// DisconnectUser closes, on every server of the deployment, each connection
// in account that the auth callout admitted as user (RuntimeUserName,
// ConsumerUserName), leaf node connections included (a site's leaf admitted
// with a runtime's credential), and returns how many it closed. A connection keeps the
// permissions it was admitted with until it re-authenticates, so a revoked
// credential's open connections must be closed, not merely refused next time.
func DisconnectUser(ctx context.Context, nc *nats.Conn, account, user string) (int, error) {
	closed := 0
	for offset := 0; ; offset += connzPage {
		answers, err := connz(ctx, nc, connzRequest{Account: account, Username: true, Offset: offset, Limit: connzPage})
		if err != nil {
			return closed, err
		}
		more := false
		for _, a := range answers {
			if a.Data == nil {
				continue
			}
			more = more || len(a.Data.Conns) == connzPage
			for _, c := range a.Data.Conns {
				if c.AuthorizedUser != user {
					continue
				}
				if err := kick(ctx, nc, a.Server.ID, c.Cid); err != nil {
					return closed, err
				}
				closed++
			}
		}
		if !more {
			return closed, nil
		}
	}
}

// connz asks every server for a page of its connections.
func connz(ctx context.Context, nc *nats.Conn, req connzRequest) ([]connzAnswer, error) {
	body, _ := json.Marshal(req)
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("list connections: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(SystemConnzSubject, inbox, body); err != nil {
		return nil, fmt.Errorf("list connections: %w", err)
	}
	var answers []connzAnswer
	for {
		wait := serverGather
		if len(answers) == 0 {
			wait = DefaultCallTimeout
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		msg, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			if len(answers) > 0 && ctx.Err() == nil {
				return answers, nil
			}
			return nil, fmt.Errorf("list connections: %w", err)
		}
		var a connzAnswer
		if err := json.Unmarshal(msg.Data, &a); err != nil {
			return nil, fmt.Errorf("list connections: %w", err)
		}
		if a.Error != nil {
			return nil, fmt.Errorf("list connections on %s: %s", a.Server.ID, a.Error.Description)
		}
		answers = append(answers, a)
	}
}

// kick closes one connection of one server.
func kick(ctx context.Context, nc *nats.Conn, serverID string, cid uint64) error {
	body, _ := json.Marshal(map[string]uint64{"cid": cid})
	if _, err := nc.RequestWithContext(ctx, SystemKickSubject(serverID), body); err != nil {
		return fmt.Errorf("close connection %d on %s: %w", cid, serverID, err)
	}
	return nil
}
