package ui

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"

	"charm.land/bubbles/v2/key"
	"charm.land/huh/v2"
	"golang.org/x/term"
)

// ErrCancelled is a question answered with nothing.
var ErrCancelled = errors.New("cancelled")

// Pick asks which of items to take, as a list on the terminal in and
// out: ↑/↓ (or j/k) move, space (or x) selects, ctrl+a selects every
// one, enter confirms, esc or ctrl+c cancels. It returns the chosen
// indexes in the list's order; none chosen is ErrCancelled.
func Pick(in io.Reader, out io.Writer, question string, items []string) ([]int, error) {
	opts := make([]huh.Option[int], len(items))
	for i, it := range items {
		opts[i] = huh.NewOption(it, i)
	}
	var chosen []int
	// The list's height counts its title and description; huh's default
	// fits the options alone. On a short terminal the list scrolls.
	height := len(items) + 3
	if f, ok := out.(*os.File); ok {
		if _, rows, err := term.GetSize(int(f.Fd())); err == nil && rows > 4 {
			height = min(height, rows-2) // the help line below
		}
	}
	list := huh.NewMultiSelect[int]().Title(question).
		Description("space or x selects, enter confirms, esc cancels").
		Options(opts...).Value(&chosen).Height(height)
	keys := huh.NewDefaultKeyMap()
	keys.Quit = key.NewBinding(key.WithKeys("ctrl+c", "esc"), key.WithHelp("esc", "cancel"))
	form := huh.NewForm(huh.NewGroup(list)).WithInput(in).WithOutput(out).WithShowHelp(true).WithKeyMap(keys)
	if err := form.Run(); err != nil {
		if errors.Is(err, huh.ErrUserAborted) {
			return nil, ErrCancelled
		}
		return nil, err
	}
	if len(chosen) == 0 {
		return nil, ErrCancelled
	}
	slices.Sort(chosen)
	return chosen, nil
}

// Edit opens path in editor, run by the shell so that an editor with
// arguments ("code -w") works; path goes in as an argument, never as
// shell text.
func Edit(ctx context.Context, editor, path string, in io.Reader, out, errw io.Writer) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", editor+` "$1"`, "sh", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, errw
	return cmd.Run()
}
