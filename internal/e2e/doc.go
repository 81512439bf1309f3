// Package e2e holds the end-to-end tests of `codemode agent` (docs/semantics.md §20): they build
// the real codemode binary once and drive it as a subprocess against scripted model servers (OpenAI
// chat completions and Anthropic Messages, JSON and SSE) started by the tests, with built-in,
// plugin, client and real MCP tools. The package has no code of its own.
package e2e
