package server

import (
	"encoding/json"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
)

// Targeted debug logging, switched by environment variables (docs/semantics.md D1; the original's OPENCLAW_DEBUG_*
// names with our prefix). All of it goes to the server's logger (stderr), never to the protocol
// stream.
//
//	CODEMODE_DEBUG_CODE_MODE=1                 activation summary and every exec/wait result
//	CODEMODE_DEBUG_MODEL_PAYLOAD=tools         the model-facing tool names on every refresh
//	CODEMODE_DEBUG_MODEL_PAYLOAD=full-redacted a bounded, redacted JSON of the tool payload
//	CODEMODE_DEBUG_MODEL_TRANSPORT=1           the MCP SDK's own activity log
type debugFlags struct {
	codeMode  bool
	payload   string
	transport bool
}

// debugFromEnv reads the switches; a value it does not know is logged as a warning (it would
// otherwise look like a switch that does nothing).
func debugFromEnv(log *slog.Logger) debugFlags {
	on := func(k string) bool {
		v := strings.ToLower(os.Getenv(k))
		return v != "" && v != "0" && v != "false"
	}
	d := debugFlags{
		codeMode:  on("CODEMODE_DEBUG_CODE_MODE"),
		payload:   strings.TrimSpace(os.Getenv("CODEMODE_DEBUG_MODEL_PAYLOAD")),
		transport: on("CODEMODE_DEBUG_MODEL_TRANSPORT"),
	}
	switch strings.ToLower(d.payload) {
	case "", "0", "false", "off":
		d.payload = ""
	case "tools", "full-redacted":
		d.payload = strings.ToLower(d.payload)
	default:
		log.Warn(`CODEMODE_DEBUG_MODEL_PAYLOAD is neither "tools" nor "full-redacted": ignored`, "value", clipString(d.payload, 64))
		d.payload = ""
	}
	return d
}

func (d debugFlags) logSurface(log *slog.Logger, surf *codemode.Surface) {
	if d.codeMode {
		log.Info("code mode surface", "active", surf.Active(), "visibleTools", surf.ToolNames(), "catalog", surf.Catalog().Size)
	}
	switch d.payload {
	case "tools":
		log.Info("model payload tools", "names", surf.ToolNames())
	case "full-redacted":
		log.Info("model payload (redacted)", "tools", redactedPayload(surf.Tools()))
	}
}

func (d debugFlags) logResult(log *slog.Logger, tool, callID, principal string, res api.ExecResult) {
	if !d.codeMode {
		return
	}
	log.Info("code mode "+tool, "call", callID, "principal", principal, "status", res.Status, "code", res.Code, "runId", res.RunID,
		"pending", len(res.PendingToolCalls), "ms", res.Telemetry.DurationMs, "searches", res.Telemetry.SearchCount,
		"calls", res.Telemetry.CallCount, "error", clipString(res.Error, 300))
}

// redactedPayload is the tool list with long strings cut: enough to debug its shape, bounded.
func redactedPayload(tools []codemode.ModelTool) string {
	type t struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema string `json:"inputSchema"`
	}
	out := make([]t, 0, len(tools))
	for _, m := range tools {
		out = append(out, t{Name: m.Name, Description: clipString(m.Description, 200), InputSchema: clipString(string(m.InputSchema), 200)})
	}
	b, _ := json.Marshal(out)
	return clipString(string(b), 8000)
}

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…[redacted " + strconv.Itoa(len(s)-n) + " bytes]"
}
