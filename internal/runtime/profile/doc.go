// Package profile is the runtime's local connection profile store,
// ~/.a2a/runtime.json (seed 001 §2.4, §5). It holds the credentials a2a-runtime
// gets from pairing, so it is written atomically with mode 0600, refused when
// other users could read it, mutated under a file lock so concurrent runtime
// processes never lose each other's writes, and a Profile never prints its
// runtime token.
package profile
