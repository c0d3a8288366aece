#!/bin/sh
# Builds a2a-runtime and a2a-adapter for the systems people run agents on,
# into OUT_DIR with their SHA256SUMS: what a platform offers at /install.sh
# (a2a-platform up --downloads-dir OUT_DIR). `make dist` runs it for every
# target; a release is the same folder. VERSION, when set, is the version
# the programs report (as the container image's build stamps it); without
# it they report their Go build information.
#   [VERSION=v1.2.0] deploy/dist.sh OUT_DIR [os/arch ...]
set -eu
out=${1:?usage: deploy/dist.sh OUT_DIR [os/arch ...]}
shift
targets=${*:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"}
go=${GO:-go}
mkdir -p "$out"
for target in $targets; do
	os=${target%/*}
	arch=${target#*/}
	for prog in a2a-runtime a2a-adapter; do
		CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$go" build -trimpath \
			-ldflags "-s -w -X github.com/a2amesh/a2amesh/internal/version.Override=${VERSION:-}" \
			-o "$out/${prog}_${os}_${arch}" "./cmd/$prog"
	done
done
cd "$out"
if command -v sha256sum >/dev/null 2>&1; then
	sha256sum a2a-runtime_* a2a-adapter_* >SHA256SUMS
else
	shasum -a 256 a2a-runtime_* a2a-adapter_* >SHA256SUMS
fi
echo "built $(wc -l <SHA256SUMS | tr -d ' ') programs into $out"
