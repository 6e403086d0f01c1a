// Command ln is the lab's stand-in for root in a privileged pod: built
// into a FROM-scratch image and run with the guest's registry cache
// mounted, "ln TARGET LINK" replaces LINK (a mirror's folder) with a
// symbolic link to TARGET, as a hostile workload would (issue S1).
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: ln TARGET LINK")
		os.Exit(2)
	}
	if err := os.RemoveAll(os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.Symlink(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
