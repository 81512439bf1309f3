package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/gateway"
	"github.com/codemode-go/codemode/internal/agent"
	"github.com/codemode-go/codemode/internal/provider"
	"github.com/codemode-go/codemode/internal/trajectory"
)

const agentSynopsis = `[--config FILE] --base-url URL --model NAME [--provider openai|anthropic]
                      [--api-key-env VAR] [--transcript FILE] [--max-turns N] [--client-tools FILE]
                      [--system TEXT] [--stream] [--approve ask|none|all|readonly] [--timeout D]
                      [--max-retries N] [--quiet] PROMPT`

const agentAbout = `
Runs an agent loop against a model: the model gets exec, wait and the direct-only tools; every
other tool of the configuration (built-in, plugins, MCP servers, client tools) is behind exec.
The final answer goes to stdout, each turn, exec, wait and nested call to stderr. Exit status:
0 answered, 1 failed, 2 usage or configuration error, 130 interrupted.`

// exit status of an agent run interrupted by Ctrl-C (the shell's 128 + SIGINT).
const exitInterrupted = 130

// runAgent implements `codemode agent`.
func runAgent(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newCommand("agent", agentSynopsis, agentAbout, stdout, stderr)
	fs := c.fs
	cfgPath := fs.String("config", "", "configuration `FILE` (JSON5); default: the embedded default")
	baseURL := fs.String("base-url", "", "the provider's API base `URL` (OpenAI-compatible servers: Ollama, vLLM, llama.cpp, OpenAI)")
	model := fs.String("model", "", "the model `NAME`")
	prov := fs.String("provider", provider.OpenAI, "wire `PROTOCOL`: openai (chat completions) or anthropic (messages)")
	keyEnv := fs.String("api-key-env", "", "environment `VARIABLE` holding the API key (default OPENAI_API_KEY or ANTHROPIC_API_KEY)")
	transcript := fs.String("transcript", "", "append the run's trajectory (JSON Lines, rotated and bounded by the limits of the config's serve.trajectory) to `FILE`; read it with codemode trace FILE")
	maxTurns := fs.Int("max-turns", agent.DefaultMaxTurns, "the most model calls (`N`) of the run")
	clientTools := fs.String("client-tools", "", "JSON5 `FILE` of client tools: [{name, description, inputSchema, command: [argv…]}]")
	system := fs.String("system", "", "system prompt `TEXT` (default: a short generic one)")
	stream := fs.Bool("stream", false, "ask the provider for a streamed (SSE) response")
	quiet := fs.Bool("quiet", false, "print only the final answer (no progress on stderr)")
	approve := fs.String("approve", "", "`POLICY` for calls that need approval (tools.approvals): ask (on the terminal; the default when stdin is one), none, all or readonly")
	timeout := fs.Duration("timeout", provider.DefaultTimeout, "`DURATION` bound on each model request (each attempt, streaming included)")
	maxRetries := fs.Int("max-retries", provider.DefaultMaxRetries, "`N` retries of a model request after 429, 5xx, timeouts and connection failures (0: none)")
	pos, status, done := c.parse(args)
	if done {
		return status
	}
	var err error
	prompt := strings.TrimSpace(strings.Join(pos, " "))
	switch {
	case prompt == "":
		return c.usageError("give the prompt as the last argument")
	case *baseURL == "":
		return c.usageError("--base-url is required (for example http://localhost:11434/v1 for Ollama)")
	case *model == "":
		return c.usageError("--model is required")
	case *prov != provider.OpenAI && *prov != provider.Anthropic:
		return c.usageError("--provider must be openai or anthropic, not %q", *prov)
	case *maxTurns < 1:
		return c.usageError("--max-turns must be at least 1")
	case *timeout <= 0:
		return c.usageError("--timeout must be positive (for example 30s or 5m)")
	case *maxRetries < 0 || *maxRetries > 10:
		return c.usageError("--max-retries must be 0–10")
	}
	if *approve == "" {
		*approve = agent.ApproveNone
		if isTerminal(stdin) {
			*approve = agent.ApproveAsk
		}
	}
	var approver api.Approver
	if *approve == agent.ApproveAsk {
		term := agent.NewTerminal(stdin, stderr)
		term.Echo = !isTerminal(stdin)
		approver = term
	} else if approver, err = agent.PolicyApprover(*approve); err != nil {
		return c.usageError("--approve: %v", err)
	}
	if *keyEnv == "" {
		*keyEnv = map[string]string{provider.OpenAI: "OPENAI_API_KEY", provider.Anthropic: "ANTHROPIC_API_KEY"}[*prov]
	}
	debug, err := provider.DebugFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "codemode agent:", err)
		return exitUsage
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return configError(stderr, err)
	}
	var ctools []*api.Tool
	procs := &clientPrograms{}
	if *clientTools != "" {
		if ctools, err = loadClientTools(*clientTools, procs); err != nil {
			fmt.Fprintln(stderr, "codemode agent: client tools:", err)
			return exitUsage
		}
	}
	log := stderrLogger(stderr)
	var sinks []api.Trajectory
	if *transcript != "" {
		w, err := trajectory.Open(*transcript, cfg.Serve.TrajectoryLimits)
		if err != nil {
			fmt.Fprintln(stderr, "codemode agent:", err)
			return exitUsage
		}
		w.AddSecrets(trajectory.ConfigSecrets(cfg)...) // issue 22 item 7
		defer func() {
			if err := w.Close(); err != nil {
				fmt.Fprintln(stderr, "codemode agent: transcript:", err)
			}
		}()
		sinks = append(sinks, w)
	}
	var printer *agent.Printer
	if !*quiet {
		printer = agent.NewPrinter(stderr)
		sinks = append(sinks, printer)
	}
	// Runs before the transcript closes and after the gateway has cancelled everything: the
	// client tool programs of cancelled calls are gone, and their calls' records are written.
	defer func() {
		if !procs.wait(clientToolWaitDelay+time.Second, len(sinks) > 0) {
			fmt.Fprintln(stderr, "codemode agent: some client tool programs did not exit")
		}
	}()
	var traj api.Trajectory
	if len(sinks) > 0 {
		traj = procs.trajectory(trajectory.Multi(sinks...))
	}
	// Children (tools.swarm) talk to the same provider as the run, unless the configuration
	// names their model (tools.swarm.model).
	var children codemode.AgentRunner
	if cfg.Tools.Swarm.Enabled && cfg.Tools.Swarm.Model == nil {
		children = &agent.Runner{Model: *model, Provider: provider.Options{
			Provider: *prov, BaseURL: *baseURL, APIKey: os.Getenv(*keyEnv), APIKeyVar: *keyEnv,
			Stream: *stream, Logger: log, Debug: debug, Timeout: *timeout, MaxRetries: retriesOption(*maxRetries)}}
	}
	g, err := gateway.Open(ctx, withoutAuditLog(cfg), gateway.Options{Logger: log, Trajectory: traj, Approver: approver, Agents: children})
	if err != nil {
		fmt.Fprintln(stderr, "codemode agent:", err)
		return exitFailed
	}
	defer g.Close()
	if err := g.Runtime().Err(); err != nil {
		// Fail closed: never fall back to showing the model every tool.
		fmt.Fprintln(stderr, "codemode agent: code mode runtime unavailable:", err)
		return exitFailed
	}
	rc := agentRun(*model, *prov)
	s := g.Surface(rc, ctools)
	// Ctrl-C (or a failure) ends the run: its suspended snapshots and pending calls go with it.
	defer g.Runtime().EndSession(rc.SessionKey)
	client, err := provider.New(provider.Options{
		Provider: *prov, BaseURL: *baseURL, APIKey: os.Getenv(*keyEnv), APIKeyVar: *keyEnv,
		Stream: *stream, Logger: log, Debug: debug, CheckPayload: s.CheckPayload,
		Timeout: *timeout, MaxRetries: retriesOption(*maxRetries),
	})
	if err != nil {
		fmt.Fprintln(stderr, "codemode agent:", err)
		return exitUsage
	}
	opts := agent.Options{Client: client, Model: *model, System: *system, MaxTurns: *maxTurns, Trajectory: traj}
	if printer != nil {
		opts.Progress = printer
		fmt.Fprintf(stderr, "codemode agent: %s via %s at %s; model sees %s\n", *model, *prov, *baseURL, strings.Join(s.ToolNames(), ", "))
	}
	res, err := agent.Run(ctx, s, opts, prompt)
	if err != nil {
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			n := g.Runtime().EndSession(rc.SessionKey)
			fmt.Fprintf(stderr, "codemode agent: interrupted; the run was cancelled with its suspended work (%d suspended code-mode run%s dropped)\n", n, plural(n))
			return exitInterrupted
		}
		fmt.Fprintln(stderr, "codemode agent:", err)
		return exitFailed
	}
	fmt.Fprintln(stdout, res.Answer)
	if printer != nil {
		fmt.Fprintf(stderr, "codemode agent: %d turns, %d tool calls, %d input + %d output tokens\n",
			res.Turns, res.ToolCalls, res.Usage.InputTokens, res.Usage.OutputTokens)
	}
	return exitOK
}

// retriesOption is --max-retries as provider.Options takes it (0 is its default, negative none).
func retriesOption(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// isTerminal reports whether r is an interactive terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// agentRun is the run context of one `codemode agent` invocation: its own session, so its
// suspended runs and telemetry belong to nobody else.
func agentRun(model, prov string) api.RunContext {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	sender := ""
	if u, err := user.Current(); err == nil {
		sender = u.Username
	}
	return api.RunContext{AgentID: "codemode-agent", SessionKey: "agent-" + id, SessionID: "agent-" + id,
		RunID: "run-" + id, Model: model, Provider: prov, SenderID: sender, Channel: "cli"}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
