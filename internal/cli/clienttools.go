package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
)

// Client tools are tools the client of one run brings along (K1: catalogued last, as
// client:<owner>:<name>). For `codemode agent` they are programs: the tool's JSON input arrives on
// the program's stdin and its stdout is the result (JSON output also becomes the result's
// details). Their metadata is untrusted like any client's (G1: no hints from their schemas).

// clientToolOwner is the owner of the CLI's client tools: client:cli:<name>.
const clientToolOwner = "cli"

const (
	clientToolTimeout   = 60 * time.Second
	clientToolMaxOutput = 1 << 20
)

type clientToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// Command is the program and its arguments (no shell).
	Command []string `json:"command"`
	// TimeoutMs bounds one call (default 60000).
	TimeoutMs int `json:"timeoutMs"`
}

var toolName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

// loadClientTools reads a JSON5 file holding an array of client tool definitions.
func loadClientTools(path string) ([]*api.Tool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var defs []clientToolDef
	if err := config.DecodeJSON5(data, &defs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	tools := make([]*api.Tool, 0, len(defs))
	for i, d := range defs {
		switch {
		case !toolName.MatchString(d.Name):
			return nil, fmt.Errorf("%s: tool %d: name %q must be 1–64 letters, digits, _ or -", path, i, d.Name)
		case seen[d.Name]:
			return nil, fmt.Errorf("%s: tool %q is defined twice", path, d.Name)
		case len(d.Command) == 0 || d.Command[0] == "":
			return nil, fmt.Errorf("%s: tool %q has no command", path, d.Name)
		case len(d.InputSchema) > 0 && !json.Valid(d.InputSchema):
			return nil, fmt.Errorf("%s: tool %q: inputSchema is not JSON", path, d.Name)
		case d.TimeoutMs < 0 || d.TimeoutMs > 600000:
			return nil, fmt.Errorf("%s: tool %q: timeoutMs must be 0–600000", path, d.Name)
		}
		seen[d.Name] = true
		tools = append(tools, commandTool(d))
	}
	return tools, nil
}

func commandTool(d clientToolDef) *api.Tool {
	timeout := clientToolTimeout
	if d.TimeoutMs > 0 {
		timeout = time.Duration(d.TimeoutMs) * time.Millisecond
	}
	argv := append([]string(nil), d.Command...)
	return &api.Tool{
		Name: d.Name, Description: d.Description, InputSchema: d.InputSchema,
		Source: api.SourceClient, Owner: clientToolOwner,
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Stdin = bytes.NewReader(c.Input)
			var stdout, stderr limitedBuffer
			stdout.max, stderr.max = clientToolMaxOutput, 8<<10
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s did not finish within %s", d.Name, timeout)
			}
			out := strings.TrimRight(stdout.String(), "\n")
			if err != nil {
				var exit *exec.ExitError
				if !errors.As(err, &exit) {
					return nil, fmt.Errorf("%s: %v", d.Name, err)
				}
				msg := strings.TrimSpace(stderr.String())
				if msg == "" {
					msg = out
				}
				return &api.Result{IsError: true, Content: []api.ContentBlock{{Type: "text",
					Text: fmt.Sprintf("%s exited with status %d: %s", d.Name, exit.ExitCode(), msg)}}}, nil
			}
			res := &api.Result{Content: []api.ContentBlock{{Type: "text", Text: out}}}
			if b := bytes.TrimSpace([]byte(out)); len(b) > 0 && json.Valid(b) {
				res.Details = b
			}
			return res, nil
		},
	}
}

// limitedBuffer keeps the first max bytes written and discards the rest (a chatty program must
// not grow the gateway's memory).
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
