// Package provider talks to model providers: OpenAI Chat Completions (OpenAI, Ollama, vLLM,
// llama.cpp and every other OpenAI-compatible server) and Anthropic Messages, behind one
// provider-neutral Client. It speaks exactly two endpoints — POST <base>/chat/completions and
// POST <base>/v1/messages, each as one JSON body or as a server-sent event stream — with its
// own wire code (openai.go, anthropic.go, sse.go) instead of the providers' SDKs, which are
// whole-API clients half the size of the codemode binary (RATIONALE.md, "Why our own wire
// code for the two model APIs").
//
// A Request is the whole conversation so far (user text, assistant text and tool calls, tool
// results) plus the model-visible tools; a Response is the model's text and tool calls, the
// same whether it arrived as one JSON body or as a server-sent event stream (Options.Stream).
//
// # Why it is built this way
//
// Every call goes through one loop (transport.go) that sees each HTTP attempt:
//
//   - A10 at the real payload. The bytes about to be sent are read for their tool names and
//     Options.CheckPayload runs on them before every attempt. A refusal ends the call before
//     any byte is written. Checking the body rather than Request.Tools means nothing added
//     later can slip by.
//   - Bounded everything. A hostile or broken server cannot make us buffer without limit
//     (MaxResponseBytes covers JSON bodies, error bodies and streams), hang us (Timeout covers
//     each attempt, stream included) or make us sleep as long as its retry-after says (longer
//     than MaxRetryDelay ends the call with a rate-limit error that says how long it asked).
//   - Retries of what may succeed later: 408/409/429/5xx (or x-should-retry: true), refused
//     or dropped connections, attempts that timed out; after retry-after, else 0.5s doubling
//     (at most 8s) with jitter. A reply that is not the protocol is not retried.
//   - Errors a person can act on. Status, headers and the start of every body are recorded as
//     they pass, so an *Error can say "check the key in OPENAI_API_KEY" or "is this the base URL
//     of an OpenAI-compatible API?" even when nothing could be parsed (an HTML page from a
//     wrong base URL). Server text is clipped and stripped of control characters.
//   - Debugging (D1): the tool names of each body, a bounded redacted snapshot of it, every SSE
//     event as it was on the wire, every HTTP attempt — see DebugFromEnv.
//
// Nothing reads the environment: a key in OPENAI_API_KEY must never travel to a local server
// that was configured without one. Options are the only source of settings, only the key the
// caller passed is sent, and redirects are not followed (they would replay the key elsewhere).
//
// Replies are decoded strictly where the meaning is (content, tool calls, arguments, the
// order of stream events) and leniently where a field is only passed through (ids, model
// names, token counts); unknown fields and unknown stream events are ignored, as both APIs
// ask of clients.
//
// Malformed tool calls are kept, not dropped or replaced by `{}`: ToolCall.Malformed says why
// and RawArguments keeps the text, so the harness can answer with an error the model learns
// from. RawArguments is the text exactly as it arrived: an OpenAI arguments string (or the
// JSON, from servers that send an object), an Anthropic tool_use input byte for byte, or the
// concatenated input_json_delta pieces of a stream.
//
// Not supported on purpose: images and other non-text content, extended-thinking blocks (they
// are dropped from responses and never replayed), provider-side tools.
//
// Package scripted is the test double: a server that speaks both wire formats from a script.
package provider
