#!/usr/bin/env bash
# Checks the hosted MCP server with the official MCP inspector CLI: tools/list, then one
# tools/call. Usage: scripts/mcp-inspector.sh [MCP_URL] API_KEY
#   scripts/mcp-inspector.sh http://localhost:8080/mcp/http sk_live_...
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
url="${1:-http://localhost:8080/mcp/http}"
key="${2:?usage: scripts/mcp-inspector.sh [MCP_URL] API_KEY}"
# @modelcontextprotocol/inspector-cli 1.0.3 is the inspector's CLI that runs on Node 20 (later
# inspector releases need Node >= 22). It looks for its package.json relative to the working
# directory, so it runs from its own build folder.
cd "$root/node_modules/@modelcontextprotocol/inspector-cli/build"
inspect() { node index.js "$url" --transport http --header "X-API-Key: $key" "$@"; }
echo "== tools/list"
inspect --method tools/list
echo "== tools/call get_scores ticker=AAPL"
inspect --method tools/call --tool-name get_scores --tool-arg ticker=AAPL
