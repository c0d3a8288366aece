// Package meshapi is the contract of A2A Mesh's services on the bus: the
// request and reply types of every service operation and a typed client that
// sends them. Front endpoints (the HTTP gateway, the A2A layer, admin commands) and
// runtimes import this package; no one imports a service.
package meshapi
