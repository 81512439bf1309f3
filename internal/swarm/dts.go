package swarm

import "fmt"

// FilePath is the virtual declaration file of the swarm globals (API.read).
const FilePath = "agents.d.ts"

// FileDescription is its line in API.list.
const FileDescription = "Swarm: agents.run, phase and log — types, limits and orchestration idioms"

// DTS renders agents.d.ts with the limits in force.
func (rt *Runtime) DTS(depth int) string {
	lim := rt.lim
	nested := "Children cannot start children of their own."
	if lim.MaxDepth-depth > 1 {
		nested = fmt.Sprintf("Children may start children %d level(s) deeper; keep groups flat when you can.", lim.MaxDepth-depth-1)
	}
	return fmt.Sprintf(`// Swarm: child agents started from a cell. Each child is a one-shot agent with its own model
// conversation and its own tools (a subset of this run's); it never asks a person for approval (a
// call that needs one is refused). Up to %d children of this run run at once, the rest wait in
// call order; at most %d are running or waiting at a time and %d in the run's whole life. A child
// has %d seconds and %d model turns. %s
// A child that outlives the exec makes its result "waiting": call wait with the runId to continue.
// Children share this run's results store: pass large inputs as results.save ids in the prompt
// ("load results id r_… and …"), and a child can answer with the id of a value it saved.

interface AgentRunOptions {
  /** A short name for the child in progress, errors and the trajectory. */
  label?: string;
  /** The model the child talks to (default: the configured one). */
  model?: string;
  /** A JSON Schema for the result: the child submits it through a structured_output tool, and
   * agents.run resolves to that value, checked against the schema (one correction is asked for). */
  schema?: Record<string, unknown>;
  /** Publish phase(title) just before this child starts. */
  phase?: string;
}

/** What agents.run rejects with when a child fails, is cancelled, times out, or gives no valid
 * structured value. It is not a global constructor: test e.name === "SwarmAgentError". */
interface SwarmAgentError extends Error {
  name: "SwarmAgentError";
  /** The child's run id, as in the trajectory. */
  runId: string;
  status: "failed" | "cancelled" | "timeout" | "invalid";
  /** The same as status. */
  code: "failed" | "cancelled" | "timeout" | "invalid";
  label?: string;
  /** The child's last answer (for "invalid": its raw answer). */
  text?: string;
  /** Why no structured value was accepted ("invalid"). */
  schemaError?: string;
}

interface Agents {
  /** Start a child agent and resolve to its final answer. Bad options reject with a TypeError
   * (code "invalid_input"), a limit with a RangeError (code "too_many_agents"). */
  run(prompt: string, options?: AgentRunOptions & { schema?: undefined }): Promise<string>;
  /** With options.schema: resolve to the value the child submitted, checked against it. */
  run<T = unknown>(prompt: string, options: AgentRunOptions & { schema: Record<string, unknown> }): Promise<T>;
}

declare const agents: Readonly<Agents>;
/** Publish a phase heading as progress of this exec. Fire-and-forget: it never delays the cell. */
declare function phase(title: string): void;
/** Publish a short progress note. Fire-and-forget. */
declare function log(message: string): void;

// Idioms.
// Fan out and keep what succeeded (Promise.all rejects at the first failure):
//   const settled = await Promise.allSettled(topics.map((t) => agents.run("Review " + t, { label: t })));
//   const ok = settled.filter((s) => s.status === "fulfilled").map((s) => s.value);
// Structured results:
//   const r = await agents.run("Find the bug", { schema: { type: "object",
//     properties: { file: { type: "string" }, line: { type: "integer" } }, required: ["file", "line"] } });
// A bounded decision gate:
//   let d = { ready: false }; for (let pass = 1; !d.ready && pass <= 3; pass++) {
//     phase("Check " + pass); d = await agents.run("Is the release ready? Say why.", { schema: gate }); }
// Plan, then fan out (keep the tree flat: return work to the parent):
//   const plan = await agents.run("Split this job into tasks", { schema: { type: "object",
//     properties: { tasks: { type: "array", items: { type: "string" } } }, required: ["tasks"] } });
//   return await Promise.allSettled(plan.tasks.map((t) => agents.run(t)));
// Do not respawn work that already succeeded: keep the results and report the failed lanes.
`, lim.MaxConcurrent, lim.MaxLive, lim.MaxTotal, int(lim.ChildTimeout.Seconds()), lim.MaxTurns, nested)
}

// Prompt is the exec description's paragraph about the swarm globals (only where they exist).
func (rt *Runtime) Prompt() string {
	return fmt.Sprintf(`Child agents: agents.run(prompt, {label?, model?, schema?, phase?}) starts a child agent with this run's tools and resolves to its final answer (with schema: the JSON value it submits, checked against the schema); use Promise.all/allSettled to fan out (%d run at once, the rest wait in order). A failed child rejects with an error carrying .runId and .status. phase(title) and log(message) report progress. Types and idioms: await API.read("agents.d.ts").
`, rt.lim.MaxConcurrent)
}

// DTS is agents.d.ts as this group's cells read it.
func (g *Group) DTS() string { return g.rt.DTS(g.cfg.Depth) }
