// Package bus is A2A Mesh's only way between services: the NATS connection, the
// embedded server, the JetStream streams, key-value buckets and object stores
// the services need (all named in names.go, with the services' own names),
// CloudEvents on NATS, and the request/reply conventions of the services: the
// skeleton every service is built on (Serve answers its operations, Periodic
// runs its maintenance jobs) and the calls that reach it (Call).
package bus
