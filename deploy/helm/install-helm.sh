#!/bin/sh
# Installs helm, at the version the chart tests are run with, into
# <dir>/helm/helm (default .hostclis at the repository root, ignored by git),
# where the chart tests (deploy/helm) find it: built from source with the Go
# toolchain, so it needs nothing but the Go module proxy. Rebuilt only when
# the pinned version is not already there. `make test-deps` runs it.
#   deploy/helm/install-helm.sh [dir]
set -eu

HELM_VERSION=v3.22.0

root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${1:-${A2A_HOST_CLIS:-$root/.hostclis}}"
mkdir -p "$dir/helm"
dir="$(cd "$dir/helm" && pwd)"
go=${GO:-go}

if [ -x "$dir/helm" ] && [ "$("$dir/helm" version --template '{{.Version}}' 2>/dev/null)" = "$HELM_VERSION" ]; then
	echo "install-helm: helm $HELM_VERSION already installed"
	exit 0
fi
echo "install-helm: building helm $HELM_VERSION"
# The version is stamped as helm's release builds stamp it (the module's
# own source says only the minor version).
GOBIN="$dir" CGO_ENABLED=0 GOFLAGS=-buildvcs=false "$go" install -trimpath \
	-ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
	"helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
got="$("$dir/helm" version --template '{{.Version}}')"
if [ "$got" != "$HELM_VERSION" ]; then
	echo "install-helm: helm reports $got after installing $HELM_VERSION" >&2
	exit 1
fi
echo "install-helm: $dir/helm $got"
