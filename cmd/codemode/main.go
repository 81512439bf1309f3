// Command codemode is the code-mode gateway: an MCP server that puts exec and wait in front of
// any set of MCP servers and built-in tools, and a CLI to run cells and inspect the catalog.
// Run `codemode help` for the commands.
package main

import (
	"os"

	"github.com/codemode-go/codemode/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
