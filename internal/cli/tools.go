package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/gateway"
)

// runTools prints the model-facing tool list exactly as a model would receive it: an array of
// {name, description, inputSchema}.
func runTools(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCommand("tools", "[--config FILE]", `
Prints the tool list a model receives from this configuration, as JSON ({name, description,
inputSchema}…): exec, wait and the direct-only tools when code mode is on. Warnings about the
tool set go to stderr.`, stdout, stderr)
	cfgPath := c.fs.String("config", "", "configuration `FILE` (JSON5); default: the embedded default")
	pos, status, done := c.parse(args)
	if done {
		return status
	}
	if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return configError(stderr, err)
	}
	g, err := gateway.Open(ctx, withoutAuditLog(cfg), gateway.Options{Logger: stderrLogger(stderr)})
	if err != nil {
		fmt.Fprintln(stderr, "codemode tools:", err)
		return exitFailed
	}
	defer g.Close()
	s := g.Surface(api.RunContext{AgentID: "cli", SessionKey: "cli"}, nil)
	tools := s.Tools()
	for _, w := range s.Warnings() {
		fmt.Fprintln(stderr, "codemode tools: warning:", w)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(tools); err != nil {
		fmt.Fprintln(stderr, "codemode tools:", err)
		return exitFailed
	}
	return exitOK
}
