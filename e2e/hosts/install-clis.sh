#!/usr/bin/env bash
# Installs the agent host CLIs that the real-host tests drive, from npm, at
# the versions docs/adapter.md says were tested, into one folder (default
# .hostclis at the repository root, ignored by git):
#
#   <dir>/node       Node.js 24 from the npm package "node" (Claude Code needs
#                    Node >= 22, OpenClaw >= 24.16; the machine's own Node may
#                    be older)
#   <dir>/claude     @anthropic-ai/claude-code
#   <dir>/codex      @openai/codex
#   <dir>/gemini     @google/gemini-cli
#   <dir>/openclaw   openclaw
#
# Each is reinstalled only when its pinned version is not already there.
# The tests find the folder through A2A_HOST_CLIS, which .ci/run sets.
set -euo pipefail

NODE_VERSION=24.21.0
CLAUDE_VERSION=2.1.330
CODEX_VERSION=0.169.0
GEMINI_VERSION=0.61.0
OPENCLAW_VERSION=2026.9.6

root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${1:-${A2A_HOST_CLIS:-$root/.hostclis}}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

if ! command -v npm >/dev/null 2>&1; then
	echo "install-clis: npm is required (Debian: apt-get install nodejs npm)" >&2
	exit 1
fi

# installed <prefix> <package> <version>: whether that version is in place.
installed() {
	local pj="$1/node_modules/$2/package.json"
	[ -f "$pj" ] && grep -q "\"version\": \"$3\"" "$pj"
}

# install <name> <package> <version>
install() {
	local prefix="$dir/$1"
	if installed "$prefix" "$2" "$3"; then
		echo "install-clis: $2@$3 already installed"
		return
	fi
	echo "install-clis: installing $2@$3"
	rm -rf "$prefix"
	mkdir -p "$prefix"
	# npm runs under Node 24 once it is installed (first in PATH), so the
	# packages' engine checks and install scripts see the Node they run on.
	npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$2@$3" >/dev/null
	if ! installed "$prefix" "$2" "$3"; then
		echo "install-clis: $2@$3 did not install" >&2
		exit 1
	fi
}

install node node "$NODE_VERSION"
export PATH="$dir/node/node_modules/.bin:$PATH"
node_version="$(node --version)"
if [ "$node_version" != "v$NODE_VERSION" ]; then
	echo "install-clis: node is $node_version after installing $NODE_VERSION" >&2
	exit 1
fi
install claude @anthropic-ai/claude-code "$CLAUDE_VERSION"
install codex @openai/codex "$CODEX_VERSION"
install gemini @google/gemini-cli "$GEMINI_VERSION"
install openclaw openclaw "$OPENCLAW_VERSION"

for bin in claude/node_modules/.bin/claude codex/node_modules/.bin/codex gemini/node_modules/.bin/gemini openclaw/node_modules/.bin/openclaw; do
	echo "install-clis: $bin: $("$dir/$bin" --version 2>&1 | head -n 1)"
done
