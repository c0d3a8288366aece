// Package bus is A2A Mesh's only way between services: the NATS connection, the
// embedded server, the JetStream streams, key-value buckets and object stores
// the services need (all named in names.go), CloudEvents on NATS, and the
// request/reply conventions of the services.
package bus
