// Command marina turns a Mac into a multi-cluster Kubernetes lab.
package main

import (
	"os"

	"github.com/bcollard/marina/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
