// Package meshapi is the contract of A2A Mesh's services on the bus: the
// request and reply types of every service operation and a typed client that
// sends them. Each service's operations, their request and reply types and
// the Client methods that send them are in one file (agents.go, pairing.go,
// a2akeys.go and consumers.go for the credential service, registry.go,
// taskruns.go, artifacts.go, webhooks.go, delegation.go); runtime.go holds
// the operations a runtime sends (RuntimeClient), client.go the Client
// itself. The front ends (the HTTP gateway, the A2A endpoints, admin
// commands) and runtimes import this package; no one imports a service.
package meshapi
