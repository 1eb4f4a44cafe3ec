// Command throttlelab measures what CPU limits do to services. See README.md.
package main

import (
	"os"

	"github.com/throttlelab/throttlelab/internal/cli"
)

func main() { os.Exit(cli.Main()) }
