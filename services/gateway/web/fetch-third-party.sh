#!/bin/sh
# Fetches the web page's vendored libraries from npm at their pinned
# versions into assets/third_party, and prints each module's SHA-256 for
# assets/third_party/README.md. The committed files are what ships; this
# only makes an update (or a check of them) repeatable.
set -eu

MARKED_VERSION=18.2.1
DOMPURIFY_VERSION=3.5.0

here=$(cd "$(dirname "$0")" && pwd)
dest="$here/assets/third_party"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cd "$work"
npm pack --silent "marked@$MARKED_VERSION" "dompurify@$DOMPURIFY_VERSION" >/dev/null
mkdir marked dompurify
tar -xzf "marked-$MARKED_VERSION.tgz" -C marked
tar -xzf "dompurify-$DOMPURIFY_VERSION.tgz" -C dompurify

cp marked/package/lib/marked.esm.js "$dest/marked.esm.js"
cp marked/package/LICENSE "$dest/marked.LICENSE"
cp dompurify/package/dist/purify.es.mjs "$dest/purify.es.mjs"
cp dompurify/package/LICENSE "$dest/dompurify.LICENSE"
cp dompurify/package/LICENSE-MPL "$dest/dompurify.LICENSE-MPL"

cd "$dest"
if command -v sha256sum >/dev/null 2>&1; then
	sha256sum marked.esm.js purify.es.mjs
else
	shasum -a 256 marked.esm.js purify.es.mjs
fi
