package cliusage

import (
	"strings"
)

// plainWords are the texts of library errors that reach people (a report
// that could not be sent, a connection that failed) and what they mean to
// someone running the program. The texts are the libraries' own sentinels'
// (nats.go's, context's); plain_test.go checks them against those.
var plainWords = []struct{ raw, plain string }{
	{"nats: outbound buffer limit exceeded", "the connection to the platform is down and this program's send buffer is full; what could not be sent is sent again once it is connected"},
	{"nats: connection closed", "the connection to the platform was closed"},
	{"nats: connection draining", "the connection to the platform is closing"},
	{"nats: timeout", "the platform did not answer in time"},
	{"nats: no responders available for request", "nothing on the platform answered: its services may be starting, stopped, or out of reach"},
	{"nats: no servers available for connection", "none of the platform's NATS servers could be reached"},
	{"nats: authorization violation", "the platform's NATS server refused the credential"},
	{"nats: maximum payload exceeded", "the message is larger than the platform's NATS server takes"},
	{"nats: slow consumer, messages dropped", "this program fell behind and the platform's NATS server dropped messages to it"},
	{"nats: invalid connection", "there is no connection to the platform"},
	{"context deadline exceeded", "it took too long and was given up"},
}

// Plain is err's text for people: a library error that names an internal
// mechanism (nats: outbound buffer limit exceeded) is replaced by what it
// means, and the context the program put around it is kept. The programs
// render every error they print or log through it.
func Plain(err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	for _, w := range plainWords {
		text = strings.ReplaceAll(text, w.raw, w.plain)
	}
	return text
}
