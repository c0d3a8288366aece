// Package serviceunit installs a2a-runtime start as a per-user service, a
// systemd user unit on Linux and a launchd agent on macOS, so a paired runtime
// comes back after logout, reboot or a crash without a new pairing code (seed
// 001 §4.7, §9 "Reconnect"). The service names a profile and never contains
// the runtime token: the running runtime reads that from the profile file.
package serviceunit
