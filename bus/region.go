package bus

import (
	"fmt"
	"regexp"
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

// ResolveRegion is the region a platform process belongs to: configured when
// set, otherwise the name of the NATS cluster it is connected to (in a
// supercluster each region is one cluster), otherwise DefaultRegion.
func ResolveRegion(configured, clusterName string) (string, error) {
	if configured != "" {
		if err := ValidRegion(configured); err != nil {
			return "", err
		}
		return configured, nil
	}
	if clusterName == "" {
		return DefaultRegion, nil
	}
	if err := ValidRegion(clusterName); err != nil {
		return "", fmt.Errorf("the NATS cluster name %q cannot name this platform's region; set the region (--region): %w", clusterName, err)
	}
	return clusterName, nil
}
