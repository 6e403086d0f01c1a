package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
)

// showConfig prints the effective configuration, defaults included and
// passwords masked.
func showConfig(e *session.Env) error {
	cfg, err := config.Load(e.Paths)
	if errors.Is(err, config.ErrNotFound) {
		fmt.Fprintf(e.Stderr, "# %s does not exist yet: these are the defaults\n", e.Paths.Config)
		cfg, err = config.Default(), nil
	}
	if err != nil {
		return err
	}
	b, err := config.Marshal(cfg.Redacted())
	if err != nil {
		return err
	}
	_, err = e.Stdout.Write(b)
	return err
}

// editConfig opens the config in $VISUAL or $EDITOR (run by the shell, so
// "code -w" works), creating the default file first if needed, and checks
// the result.
func editConfig(ctx context.Context, e *session.Env) error {
	if _, err := config.WriteDefault(e.Paths.Config); err != nil {
		return err
	}
	editor := e.Getenv("VISUAL")
	if editor == "" {
		editor = e.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	if err := ui.Edit(ctx, editor, e.Paths.Config, e.Stdin, e.Stdout, e.Stderr); err != nil {
		return fmt.Errorf("the editor (%s) failed: %w; the file is %s", editor, err, e.Paths.Config)
	}
	if _, err := config.Load(e.Paths); err != nil {
		return fmt.Errorf("%w\nthe file was saved; fix it with `marina config edit`", err)
	}
	fmt.Fprintf(e.Stderr, "%s is valid; run `marina up` to apply it\n", e.Paths.Config)
	return nil
}

// configPath prints where the config file is.
func configPath(e *session.Env) error {
	fmt.Fprintln(e.Stdout, e.Paths.Config)
	if _, err := os.Stat(e.Paths.Config); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(e.Stderr, "(it does not exist yet: `marina up` or `marina config edit` creates it)")
	}
	return nil
}
