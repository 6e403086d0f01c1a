package cli

import "github.com/spf13/cobra"

// envHelp ends the root command's Long text: every environment variable
// marina reads (help_test.go checks the sources' Getenv calls against it).
// Indented four spaces, so that the generated Markdown keeps it a block.
const envHelp = `Environment variables:

    MARINA_HOME          marina's folder: the config, the VM, the registry cache
                         and marina's records (default ~/.marina)
    LIMACTL              the limactl binary to run (default: limactl on PATH);
                         marina runs it with its own LIMA_HOME, $MARINA_HOME/lima
    KUBECONFIG           the kubeconfig files kubectl reads: clusters are merged
                         into the first (default ~/.kube/config)
    NO_COLOR             set to anything: no spinner and no redrawn lines, each
                         step is one plain line
    TERM                 dumb or unset: plain lines, as with NO_COLOR
    HOME                 your home folder, where ~/.marina, ~/.kube and the VM's
                         Docker socket are
    SHELL                the shell docker-env prints for without --shell
    VISUAL, EDITOR       the editor config edit runs (VISUAL first, else vi)
    DOCKER_CONFIG        Docker's config folder, where docker-context writes
                         (default ~/.docker)
    DOCKER_HOST          docker-context warns when it is set (it overrides every
                         context); up suggests docker-env unless it is the VM's
                         socket
    DOCKER_CONTEXT       docker-context warns when it names another context
    DOCKER_TLS_VERIFY    docker-env warns when it is set: the VM's socket
                         speaks no TLS
    TERM_PROGRAM         the terminal app doctor names in its Local Network fix
    MARINA_RESOLVER_DIR  an absolute folder for resolver files instead of
                         /etc/resolver (the Linux lab's tests)
    MARINA_ROUTE_STYLE   bsd or linux: the route tool to drive instead of this
                         platform's (the Linux lab's tests)`

// completionExamples are the examples of cobra's completion commands, by
// name, one a line.
var completionExamples = map[string]string{
	"completion": `  # zsh: completion in every new shell
  marina completion zsh > "${fpath[1]}/_marina"

  # bash: in this shell only
  source <(marina completion bash)`,
	"bash": `  source <(marina completion bash)
  marina completion bash > "$(brew --prefix)/etc/bash_completion.d/marina"`,
	"zsh": `  source <(marina completion zsh)
  marina completion zsh > "$(brew --prefix)/share/zsh/site-functions/_marina"`,
	"fish": `  marina completion fish | source
  marina completion fish > ~/.config/fish/completions/marina.fish`,
	"powershell": `  marina completion powershell | Out-String | Invoke-Expression`,
}

// completionHelp adds cobra's completion command to root now, rather than
// when it runs (cobra keeps one that is there), so that it and its
// subcommands get examples; one that already has its own is left as it is.
func completionHelp(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		for _, s := range append([]*cobra.Command{c}, c.Commands()...) {
			if s.Example == "" {
				s.Example = completionExamples[s.Name()]
			}
		}
	}
}
