// Find MCP tools by what they do, then call them — one exec, no schemas in the prompt.
const [hit] = await MCP.$search("list the files in a directory", { limit: 3 });
text(`using ${hit.call} ${hit.input}`);
const listing = await MCP.filesystem.listDirectory({ path: "." });
const [echo] = await MCP.$search("echo a message back");
const echoed = await MCP.everything.echo({ message: "hello from code mode" });
const files = await API.list("mcp");
return {
  found: hit.call,
  entries: listing.content[0].text.split("\n").length,
  echo: echoed.content[0].text,
  echoTool: echo.call,
  declarationFiles: files.map((f) => f.path),
};
