package ui

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// ErrCancelled is a question answered with nothing.
var ErrCancelled = errors.New("cancelled")

// Pick lists items numbered from 1 on out and reads which to take: numbers
// separated by spaces or commas, or "all". It returns the chosen indexes
// in the order given, each once; an empty answer is ErrCancelled.
func Pick(in io.Reader, out io.Writer, question string, items []string) ([]int, error) {
	for i, it := range items {
		fmt.Fprintf(out, "  %d) %s\n", i+1, it)
	}
	fmt.Fprintf(out, "%s Numbers separated by spaces, \"all\", or nothing to cancel: ", question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	line = strings.TrimSpace(line)
	if line == "" {
		return nil, ErrCancelled
	}
	var idx []int
	if line == "all" {
		for i := range items {
			idx = append(idx, i)
		}
		return idx, nil
	}
	seen := map[int]bool{}
	for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == ',' }) {
		i, err := strconv.Atoi(f)
		if err != nil || i < 1 || i > len(items) {
			return nil, fmt.Errorf("%q is not one of the numbers 1 to %d", f, len(items))
		}
		if !seen[i-1] {
			seen[i-1] = true
			idx = append(idx, i-1)
		}
	}
	return idx, nil
}

// Edit opens path in editor, run by the shell so that an editor with
// arguments ("code -w") works; path goes in as an argument, never as
// shell text.
func Edit(ctx context.Context, editor, path string, in io.Reader, out, errw io.Writer) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", editor+` "$1"`, "sh", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, errw
	return cmd.Run()
}
