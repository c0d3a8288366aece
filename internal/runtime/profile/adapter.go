package profile

// LocalAdapter is the adapter a runtime hands its task runs to: where it
// calls it and, when the runtime runs it itself, how.
type LocalAdapter struct {
	// Endpoint is the adapter's run-task URL.
	Endpoint string `json:"local_agent_endpoint"`
	// Supervised is the a2a-adapter the runtime runs on Endpoint's port;
	// zero when the adapter is run separately.
	Supervised SupervisedAdapter `json:"supervised_adapter,omitzero"`
}

// AdapterOverrides are what the flags of one start change of the local
// adapter stored at pairing.
type AdapterOverrides struct {
	// Endpoint replaces the stored endpoint when not empty.
	Endpoint string
	// Supervised replaces the stored supervised adapter when not nil; a
	// zero SupervisedAdapter runs none.
	Supervised *SupervisedAdapter
	// Program names the a2a-adapter program when not empty.
	Program string
}

// EffectiveAdapter is the local adapter a start with overrides o works
// with: the stored one, changed by o. `a2a-runtime start` runs with it and
// records it in the connection, and `a2a-runtime status` checks it, so
// both speak of the same adapter.
func (p Profile) EffectiveAdapter(o AdapterOverrides) LocalAdapter {
	a := LocalAdapter{Endpoint: p.WithDefaults().LocalAgentEndpoint, Supervised: p.SupervisedAdapter}
	if o.Endpoint != "" {
		a.Endpoint = o.Endpoint
	}
	if o.Supervised != nil {
		a.Supervised = *o.Supervised
	}
	if a.Supervised.Provider == "" {
		a.Supervised = SupervisedAdapter{}
		return a
	}
	if o.Program != "" {
		a.Supervised.Program = o.Program
	}
	return a
}

// AdapterInEffect is the local adapter in use now: the one the start that
// recorded the connection works with, when running says that start still
// runs, else the one a plain start would use.
func (p Profile) AdapterInEffect(running bool) LocalAdapter {
	if running && p.Connection.LocalAdapter.Endpoint != "" {
		return p.Connection.LocalAdapter
	}
	return p.EffectiveAdapter(AdapterOverrides{})
}

// APIBaseInEffect is the platform's API base in use now: the one the
// running start recorded, when running, else the stored one.
func (p Profile) APIBaseInEffect(running bool) string {
	if running && p.Connection.APIBase != "" {
		return p.Connection.APIBase
	}
	return p.APIBase
}
