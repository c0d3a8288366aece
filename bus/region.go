package bus

import (
	"fmt"
	"regexp"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultRegion is the region of a platform whose NATS server belongs to no
// cluster (one server, the embedded server of `up`): a deployment of one
// region needs no name for it.
const DefaultRegion = "local"

// MaxRegionLen bounds a region name: it becomes part of stream, bucket and
// subject names.
const MaxRegionLen = 32

// regionName is what a region name may look like: lowercase letters, digits
// and dashes, starting with a letter and not ending with a dash. Such a name
// is a valid NATS subject token, stream name and bucket name as it is.
var regionName = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)

// ValidRegion says why name cannot be a region name, or nil.
func ValidRegion(name string) error {
	if len(name) > MaxRegionLen || !regionName.MatchString(name) {
		return fmt.Errorf("region %q: a region name is 1 to %d lowercase letters, digits and dashes, starting with a letter and not ending with a dash", name, MaxRegionLen)
	}
	return nil
}

// ResolveRegion is the region a platform process belongs to. In a NATS
// supercluster each region is one cluster, named after the region: the
// region is the name of the cluster the process is connected to, and a
// configured region must be that name (data is placed by cluster name). On a
// server in no cluster (one server, the embedded server of `up`) it is the
// configured region, or DefaultRegion.
func ResolveRegion(configured, clusterName string) (string, error) {
	if clusterName != "" {
		if configured != "" && configured != clusterName {
			return "", fmt.Errorf("region %q, but the NATS server belongs to cluster %q: in a supercluster each region is one cluster named after the region; connect to a server of region %q, or leave the region unset", configured, clusterName, configured)
		}
		if err := ValidRegion(clusterName); err != nil {
			return "", fmt.Errorf("the NATS cluster name %q cannot name a region (each region is one cluster named after it); rename the cluster: %w", clusterName, err)
		}
		return clusterName, nil
	}
	if configured == "" {
		return DefaultRegion, nil
	}
	if err := ValidRegion(configured); err != nil {
		return "", err
	}
	return configured, nil
}

// connRegion is the region of a connection's server for data placement:
// its cluster's name, or "" for a server in no cluster, where every stream
// lives on that one server and placement means nothing.
func connRegion(js jetstream.JetStream) string {
	if js.Conn() == nil {
		return ""
	}
	return js.Conn().ConnectedClusterName()
}
