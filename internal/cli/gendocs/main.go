// Command gendocs writes marina's command reference (one Markdown page per
// command) into the folder it is given: from the repository's root,
// `go run ./internal/cli/gendocs docs`. A fast test fails while docs/ is not
// what it writes, and CI runs it and diffs docs/.
package main

import (
	"fmt"
	"os"

	"github.com/bcollard/marina/internal/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: go run ./internal/cli/gendocs DIR (from the repository's root: %s)\n", cli.DocsCommand)
		os.Exit(2)
	}
	if err := cli.WriteDocs(os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "gendocs: %v\n", err)
		os.Exit(1)
	}
}
