package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/bcollard/marina/internal/skill"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// skillChecker finds every marina command and every flag a text names, and
// reports those the command tree does not have: a command path that cobra's
// Find does not resolve (aliases resolve), a hidden or deprecated command, a
// flag that is neither the command's own nor a persistent flag of one of
// its parents, and a flag standing alone that no visible command has.
//
// A mention is the word marina standing alone (`marina`, "$(marina", not
// ~/.marina, marina-dns or marina's) followed by words: in code spans, in
// code blocks and in prose alike (in code, where a shell runs a command:
// first, after a separator, sudo or "$("). Its words name subcommands as
// long as the command reached has subcommands; so prose must not put a
// lowercase word right after marina unless it is a command or one of
// proseWords ("marina frobnicates" is reported, "marina runs" is not).
// After a leaf command, words are its arguments, checked with the command's
// own cobra Args (a command that takes none, or fewer, reports them; one
// that takes free arguments accepts them); flags are checked against the
// command reached, and an -o/--output value against the formats its usage
// names ("output format: text, json or yaml"). A mention ends at
// punctuation, at a pipe, a separator, a redirection, `#`, `→`, or at `--`
// (what follows is another program's command line, as in
// `marina shell -- docker ps`). In code, marina runs where a command does:
// first, after a separator, in "$(", or after a command that runs the rest
// of its line (sudo, env, exec, time, nohup, command, xargs, watch, with
// their options); a line that ends in \ goes on on the next. Flags on the
// line of another program (`kubectl --context dev`) are not marina's and
// are not checked.
type skillChecker struct {
	root  *cobra.Command
	flags map[string]bool // every visible command's flags: "--name", "-x"
	// code keeps the check to code blocks and code spans, and to the
	// flags of marina's own command lines there: for hand-written guides,
	// whose prose says "marina records" and quotes other programs' flags.
	code bool
}

func newSkillChecker(root *cobra.Command) *skillChecker {
	skill.CompleteTree(root) // what cobra adds when it runs: help, completion, --help
	k := &skillChecker{root: root, flags: map[string]bool{}}
	for _, c := range skill.VisibleCommands(root) {
		add := func(f *pflag.Flag) {
			if f.Hidden || f.Deprecated != "" {
				return
			}
			k.flags["--"+f.Name] = true
			if f.Shorthand != "" && f.ShorthandDeprecated == "" {
				k.flags["-"+f.Shorthand] = true
			}
		}
		c.Flags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
	}
	return k
}

// check returns one line per problem, in the order found.
func (k *skillChecker) check(text string) []string {
	var problems []string
	seen := map[string]bool{}
	report := func(s string) {
		if !seen[s] {
			seen[s] = true
			problems = append(problems, s)
		}
	}
	body := text
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		fm, after, ok := strings.Cut(rest, "\n---\n")
		if !ok {
			report("the front matter has no closing ---")
			return problems
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(fm), &m); err != nil {
			report("the front matter is not YAML: " + err.Error())
		}
		for _, key := range slices.Sorted(maps.Keys(m)) {
			if s, ok := m[key].(string); ok {
				k.prose(s, report)
			}
		}
		body = after
	}
	var para []string
	flush := func() {
		if len(para) > 0 {
			k.prose(strings.Join(para, " "), report)
			para = nil
		}
	}
	inCode := false
	cont := "" // a code line that ended in \, joined with the next
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "```"):
			flush()
			if cont != "" {
				k.segment(cont, false, report)
				cont = ""
			}
			inCode = !inCode
		case inCode:
			t = strings.TrimPrefix(cont+t, "$ ")
			if c, ok := strings.CutSuffix(t, "\\"); ok {
				cont = c + " "
				continue
			}
			cont = ""
			k.segment(t, false, report)
		case t == "":
			flush()
		default:
			if len(para) > 0 && blockStart.MatchString(t) {
				para = append(para, "\x00") // a list item or a heading ends a mention
			}
			para = append(para, t)
		}
	}
	flush()
	if inCode {
		report("a code block is not closed")
	}
	return problems
}

var (
	blockStart = regexp.MustCompile(`^(#+|[-*>|]|\d+\.)\s`)
	codeSpan   = regexp.MustCompile("`([^`]*)`")
)

// prose checks a paragraph: each code span on its own, then the rest.
func (k *skillChecker) prose(s string, report func(string)) {
	for _, m := range codeSpan.FindAllStringSubmatch(s, -1) {
		k.segment(m[1], false, report)
	}
	if k.code {
		return
	}
	k.segment(codeSpan.ReplaceAllString(s, "\x00"), true, report)
}

// segment checks one code span, one line of a code block, or prose (where
// every flag is marina's; in code only a span or line that starts with a
// flag is about marina's flags).
func (k *skillChecker) segment(s string, prose bool, report func(string)) {
	toks := slices.DeleteFunc(strings.Fields(strings.ReplaceAll(s, "\x00", " \x00 ")), func(t string) bool {
		return t == "\\" // a line continued: the words go on
	})
	used := make([]bool, len(toks))
	for i, tok := range toks {
		if used[i] || strings.TrimLeft(tok, `$(["'`) != "marina" {
			continue
		}
		if !prose && !commandPosition(toks, i) {
			continue // an argument of another program: docker --context marina ps
		}
		if prose && i+1 < len(toks) && proseWords[strings.TrimRight(toks[i+1], ".,;:!?)\"'")] {
			continue // "every command marina runs"
		}
		used[i] = true
		k.mention(toks, i, used, report)
	}
	if k.code || !prose && (len(toks) == 0 || !strings.HasPrefix(toks[0], "-")) {
		return
	}
	for i, tok := range toks {
		if used[i] {
			continue
		}
		for _, part := range strings.Split(strings.Trim(tok, `.,;:!?()[]"'`), "/") {
			if isFlag(part) {
				name, _, _ := strings.Cut(part, "=")
				if !strings.HasPrefix(name, "--") {
					name = name[:2]
				}
				if !k.flags[name] {
					report(fmt.Sprintf("%s: no marina command has this flag", name))
				}
			}
		}
	}
}

// commandPosition reports whether toks[i] stands where a shell runs a
// command: first on the line (after variable assignments), in $( … ), after
// a separator, or after a command that runs the rest of its line (itself in
// a command position), with that command's options and their values
// (`watch -n 2 marina status`, `sudo -E marina up`).
func commandPosition(toks []string, i int) bool {
	if strings.Contains(toks[i], "$(") || strings.HasPrefix(toks[i], "(") {
		return true
	}
	j := i - 1
	for j >= 0 && envAssignment.MatchString(toks[j]) {
		j--
	}
	if j < 0 {
		return true
	}
	switch toks[j] {
	case "|", "||", "&&", ";", "&", "then", "do", "\x00":
		return true
	}
	for ; j >= 0; j-- {
		switch {
		case runsTheRest[toks[j]]:
			return commandPosition(toks, j)
		case strings.HasPrefix(toks[j], "-"): // an option of it
		case j > 0 && strings.HasPrefix(toks[j-1], "-") && !runsTheRest[toks[j-1]]: // an option's value
		default:
			return false // an argument of another program: docker --context marina
		}
	}
	return false
}

// runsTheRest are the commands that run the command after their options.
var runsTheRest = map[string]bool{"sudo": true, "env": true, "exec": true, "time": true, "nohup": true, "command": true, "xargs": true, "watch": true}

// endsMention are the shell words after which a command line is another
// one, or not a command's arguments: separators and redirections.
var endsMention = regexp.MustCompile(`^(\||\|\||\|&|&&?|;;?|→|[0-9]*(>>?|<)(&[0-9-]*)?|&>>?)$`)

var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// proseWords may follow marina in a sentence that names no command ("the
// commands marina runs"); none is a command's name (a test checks).
var proseWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`is was has does did can cannot will would may must should
		runs ran makes made keeps kept writes wrote reads prints says uses needs owns knows sees
		adds removes asks checks itself and or as at by of in on to for from with then`) {
		m[w] = true
	}
	return m
}()

func isFlag(s string) bool {
	if strings.HasPrefix(s, "--") {
		return len(s) > 2 && isLower(s[2])
	}
	return len(s) > 1 && s[0] == '-' && (isLower(s[1]) || s[1] >= 'A' && s[1] <= 'Z')
}

func isLower(b byte) bool { return b >= 'a' && b <= 'z' }

var word = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// mention checks the command line that starts at toks[i] (marina).
func (k *skillChecker) mention(toks []string, i int, used []bool, report func(string)) {
	cmd := k.root
	var path []string // the subcommand words, as written
	said := func() string { return strings.Join(append([]string{"marina"}, path...), " ") }
	var pos []string // the positional words after the command
	// Once the mention ends: its words are the command's arguments.
	defer func() {
		if len(pos) == 0 {
			return // the command named alone, as prose does
		}
		for _, p := range pos {
			if strings.HasPrefix(p, "[") || strings.Contains(p, "…") {
				return // a synopsis with optional or repeated words: no count to check
			}
		}
		if err := cmd.ValidateArgs(pos); err != nil {
			msg, _, _ := strings.Cut(err.Error(), "\n")
			report(fmt.Sprintf("%s: %s", said()+" "+strings.Join(pos, " "), msg))
		}
	}()
	trim := func(s string) string { return strings.TrimRight(s, ".,;:!?)\"'`") }
	// value is the word after toks[j], a flag's value, when there is one.
	value := func(j int) (string, bool) {
		if j+1 < len(toks) && toks[j+1] != "\x00" {
			return toks[j+1], true
		}
		return "", false
	}
	for j := i + 1; j < len(toks); j++ {
		tok := toks[j]
		if tok == "\x00" {
			return
		}
		t := trim(tok)
		last := t != tok
		used[j] = true
		switch {
		case t == "--":
			for j++; j < len(toks) && toks[j] != "\x00"; j++ {
				used[j] = true // another program's command line, the command's arguments
				pos = append(pos, trim(toks[j]))
			}
			return
		case t == "" || endsMention.MatchString(t) || strings.HasPrefix(t, "#"):
			used[j] = false
			return
		case strings.HasPrefix(t, "--") && len(t) > 2:
			name, v, hasValue := strings.Cut(t[2:], "=")
			f := k.flag(cmd, name, "")
			if f == nil {
				report(fmt.Sprintf("%s: %s has no flag --%s", said()+" --"+name, cmd.CommandPath(), name))
				return // its value, if it takes one, is not an argument
			}
			if f.NoOptDefVal == "" && !hasValue && !last {
				if next, ok := value(j); ok {
					j++ // its value
					used[j] = true
					v, hasValue = trim(next), true
					last = v != next
				}
			}
			if hasValue {
				k.output(cmd, f, v, said()+" "+strings.Join(toks[i+len(path)+1+len(pos):j+1], " "), report)
			}
		case isFlag(t):
			for p := 1; p < len(t); p++ {
				f := k.flag(cmd, "", t[p:p+1])
				if f == nil {
					report(fmt.Sprintf("%s: %s has no flag -%s", said()+" -"+t[p:p+1], cmd.CommandPath(), t[p:p+1]))
					return
				}
				if f.NoOptDefVal == "" { // the rest, or the next word, is its value
					v, ok := t[p+1:], p < len(t)-1
					if !ok && !last {
						if next, found := value(j); found {
							j++
							used[j] = true
							v, ok = trim(next), true
							last = v != next
						}
					}
					if ok {
						k.output(cmd, f, v, said()+" "+strings.Join(toks[i+len(path)+1+len(pos):j+1], " "), report)
					}
					break
				}
			}
		case len(pos) == 0 && t == "COMMAND" && cmd.HasSubCommands():
			return // a synopsis: `marina cluster COMMAND`
		case len(pos) == 0 && word.MatchString(t) && cmd.HasSubCommands():
			next, rest, err := k.root.Find(append(slices.Clone(path), t))
			if err != nil || len(rest) > 0 || next == cmd {
				report(fmt.Sprintf("%s: %s has no command %q (if this is prose about marina, reword it: marina followed by a word names a command)", said()+" "+t, cmd.CommandPath(), t))
				return
			}
			path = append(path, t)
			cmd = next
			if cmd.Hidden || cmd.Deprecated != "" {
				report(fmt.Sprintf("%s: %s is hidden or deprecated, not a command users have", said(), cmd.CommandPath()))
			}
		default:
			pos = append(pos, t)
		}
		if last {
			return
		}
	}
}

// outputFormat finds the formats an -o/--output flag takes in its usage.
var outputFormat = regexp.MustCompile(`^output format: ((?:[a-z]+, )*[a-z]+) or ([a-z]+)\b`)

// output checks the value v of cmd's flag f, written as said, when f is
// -o/--output: each of its |-separated forms must be a format the usage
// names.
func (k *skillChecker) output(cmd *cobra.Command, f *pflag.Flag, v, said string, report func(string)) {
	if f.Name != "output" {
		return
	}
	m := outputFormat.FindStringSubmatch(f.Usage)
	if m == nil {
		report(fmt.Sprintf("%s: the formats of %s --output cannot be read from its usage %q", said, cmd.CommandPath(), f.Usage))
		return
	}
	formats := append(strings.Split(m[1], ", "), m[2])
	for _, one := range strings.Split(v, "|") {
		if !slices.Contains(formats, one) {
			report(fmt.Sprintf("%s: %s has no output format %q (%s or %s)", said, cmd.CommandPath(), one, m[1], m[2]))
		}
	}
}

// flag is cmd's flag of that name or shorthand: its own, or a persistent
// flag of a parent. A hidden or deprecated flag counts as missing.
func (k *skillChecker) flag(cmd *cobra.Command, name, short string) *pflag.Flag {
	var f *pflag.Flag
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.InheritedFlags()} {
		if f == nil && name != "" {
			f = fs.Lookup(name)
		}
		if f == nil && short != "" {
			f = fs.ShorthandLookup(short)
		}
	}
	if f == nil || f.Hidden || f.Deprecated != "" || short != "" && f.ShorthandDeprecated != "" {
		return nil
	}
	return f
}

func freshRoot() *cobra.Command { return newRoot(io.Discard, io.Discard).command() }

func renderedSkill(t *testing.T) string {
	t.Helper()
	s, err := skillFile()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The words: a test fails if the skill names a command or flag the
// CLI does not have.
func TestSkillNamesOnlyRealCommandsAndFlags(t *testing.T) {
	rendered := renderedSkill(t)
	for _, p := range newSkillChecker(freshRoot()).check(rendered) {
		t.Errorf("the skill names what marina does not have: %s", p)
	}

	t.Run("the checker reports made-up commands and flags", func(t *testing.T) {
		root := freshRoot()
		root.AddCommand(&cobra.Command{Use: "secret", Hidden: true, Run: func(*cobra.Command, []string) {}})
		k := newSkillChecker(root)
		for _, c := range []struct{ name, text, want string }{
			{"the issue's pair", "Run `marina cluster frobnicate`, then pass --no-such-flag.\n", "frobnicate|--no-such-flag"},
			{"a command in prose", "When it hangs, marina frobnicate helps.\n", `"frobnicate"`},
			{"a command in a code block", "```sh\nmarina fleet frobnicate -f x.yaml\n```\n", `"frobnicate"`},
			{"a flag in a code block", "```sh\nmarina fleet apply -f x.yaml --frob\n```\n", "has no flag --frob"},
			{"a flag on the wrong command", "Try `marina config path --workers 2`.\n", "marina config path has no flag --workers"},
			{"a shorthand", "`marina cluster list -Z`\n", "has no flag -Z"},
			{"a shorthand alone", "Pass `-Q` to skip.\n", "-Q: no marina command has this flag"},
			{"a flag alone in prose", "Every command takes --frobnicate-all.\n", "--frobnicate-all"},
			{"a flag in a mention's prose", "Then marina up --yolo does it.\n", "has no flag --yolo"},
			{"a hidden command", "`marina secret`\n", "hidden"},
			{"the front matter", "---\nname: marina\ndescription: Use marina frobnicate when stuck.\n---\n# x\n", `"frobnicate"`},
			{"prose that reads like a command", "Then marina frobnicates.\n", `"frobnicates"`},
			{"a command after a prose word", "Run marina with marina frobnicate.\n", `"frobnicate"`},
			{"a command after a separator", "```sh\nmarina up && marina frobnicate\n```\n", `"frobnicate"`},
			{"a command in $( )", "`eval \"$(marina frobnicate)\"`\n", `"frobnicate"`},
			{"a list item", "- marina cluster frobnicate\n", `"frobnicate"`},
			{"a wrapped line", "Run\nmarina cluster\nfrobnicate now.\n", `"frobnicate"`},
			// Words after a leaf command are its arguments: one that takes
			// none, or fewer, reports them (cobra's own Args check).
			{"a word after a command that takes none", "Run `marina up frobnicate`.\n", `marina up frobnicate: unknown command "frobnicate" for "marina up"`},
			{"words after version", "```sh\nmarina version extra words\n```\n", `marina version extra words: unknown command "extra" for "marina version"`},
			{"too many arguments", "`marina cluster create dev east`\n", "marina cluster create dev east: give one cluster (2 given: dev east)"},
			{"a word after a group", "`marina cluster DEV`\n", `marina cluster DEV: unknown command "DEV" for "marina cluster"`},
			{"an output format the command lacks", "`marina status -o xml`\n", `marina status -o xml: marina status has no output format "xml" (text, json or yaml)`},
			{"an output format as --output=", "`marina cluster list --output=table`\n", `marina cluster list --output=table: marina cluster list has no output format "table" (text, json or yaml)`},
			{"an output format stuck to -o", "`marina dns list -oxml`\n", `marina dns list -oxml: marina dns list has no output format "xml"`},
			{"after watch and its options", "```sh\nwatch -n1 marina frob\n```\n", `marina has no command "frob"`},
			{"after watch -n 2", "`watch -n 2 marina frob`\n", `marina has no command "frob"`},
			{"after xargs", "```sh\necho dev | xargs marina frob\n```\n", `marina has no command "frob"`},
			{"after xargs -I", "`xargs -I{} marina frob {}`\n", `marina has no command "frob"`},
			{"after command", "`command marina frob`\n", `marina has no command "frob"`},
			{"after nohup", "`nohup marina frob &`\n", `marina has no command "frob"`},
			{"after exec", "`exec marina frob`\n", `marina has no command "frob"`},
			{"after time", "`time marina frob`\n", `marina has no command "frob"`},
			{"after sudo -E", "`sudo -E marina frob`\n", `marina has no command "frob"`},
			{"a line continued with a backslash", "```sh\nmarina cluster \\\n  frobnicate dev\n```\n", `marina cluster frobnicate: marina cluster has no command "frobnicate"`},
			{"a flag after a backslash", "```sh\nmarina cluster create dev \\\n  --frob\n```\n", "marina cluster create has no flag --frob"},
			{"a flag of another command in a code block", "```sh\nmarina config path --workers 2\n```\n", "marina config path has no flag --workers"},
			{"a flag of another command in prose", "Then marina config path --workers 2 shows it.\n", "marina config path has no flag --workers"},
		} {
			got := strings.Join(k.check(c.text), "\n")
			for _, want := range strings.Split(c.want, "|") {
				if !strings.Contains(got, want) {
					t.Errorf("%s: %q: want a report with %q, got:\n%s", c.name, c.text, want, got)
				}
			}
		}
	})

	t.Run("the real skill with a made-up line fails", func(t *testing.T) {
		bad := strings.Replace(rendered, "\n## Troubleshooting\n", "\n## Troubleshooting\n\nIf stuck, marina cluster frobnicate --no-such-flag helps.\n", 1)
		if bad == rendered {
			t.Fatal("no Troubleshooting section to add the line to")
		}
		got := newSkillChecker(freshRoot()).check(bad)
		if len(got) != 2 || !strings.Contains(got[0], `"frobnicate"`) || !strings.Contains(got[1], "--no-such-flag: no marina command has this flag") {
			t.Errorf("want the made-up command and flag reported, got %q", got)
		}
	})

	t.Run("the checker accepts what marina has", func(t *testing.T) {
		k := newSkillChecker(freshRoot())
		for w := range proseWords {
			if c, rest, err := k.root.Find([]string{w}); err == nil && len(rest) == 0 && c != k.root {
				t.Errorf("%q is a command: it cannot be a prose word", w)
			}
		}
		text := "Run `marina clusters ls -l env=dev -o json` or `marina fleet desc demo`;\n" +
			"`eval \"$(marina kubeconfig env dev)\"`, `marina shell -- sudo iptables -S DOCKER-USER`,\n" +
			"`kubectl --context dev get nodes`, `marina --debug up --dry-run`, marina's VM,\n" +
			"~/.marina/config.yaml, marina-dns, `marina cluster create dev --wait=2m -l a=b --workers 2`,\n" +
			"`marina fleet delete -f - -y`, `marina completion zsh`, `-o json`, `-y, --yes`,\n" +
			"and marina status, then marina up. Global: --config, -h. The commands marina runs, marina is.\n" +
			"`docker --context marina ps`, `MARINA_HOME=/tmp/m marina up --dry-run`, `& marina docker-env | x`\n" +
			"`marina status -o yaml`, `marina doctor --output=json`, `marina dns list -ojson`, `watch -n1 marina cluster list`,\n" +
			"`echo dev | xargs marina cluster delete`, `nohup marina up &`, `grep -q marina x`, `marina kubeconfig remove a b c`,\n" +
			"`marina cluster delete dev east -y`, `marina shell -- ls -o xml`, `marina fleet describe demo`, `marina help cluster`,\n" +
			"```sh\nmarina up            # first run: --nothing here is a flag\nmarina cluster list -o json | jq .\nmarina cluster create dev \\\n  --workers 2 \\\n  -l a=b\n```\n"
		if got := k.check(text); len(got) > 0 {
			t.Errorf("real mentions were reported:\n%s", strings.Join(got, "\n"))
		}
	})
}

// shownCommands walks the tree on its own terms (not visibleCommands'):
// every command but hidden, deprecated and help ones, and none below them.
func shownCommands(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, s := range c.Commands() {
		if s.Hidden || s.Deprecated != "" || s.Name() == "help" {
			continue
		}
		out = append(out, s)
		out = append(out, shownCommands(s)...)
	}
	return out
}

func TestSkillReferenceHasEveryCommand(t *testing.T) {
	rendered := renderedSkill(t)
	_, ref, ok := strings.Cut(rendered, "\n## Command reference\n")
	if !ok {
		t.Fatal("no Command reference section")
	}
	root := freshRoot()
	skill.CompleteTree(root)
	cmds := shownCommands(root)
	var paths []string
	for _, c := range cmds {
		paths = append(paths, c.CommandPath())
	}
	for _, want := range []string{"marina up", "marina cluster create", "marina fleet apply", "marina skill install", "marina skill path", "marina completion zsh"} {
		if !slices.Contains(paths, want) {
			t.Errorf("the walk missed %s: %v", want, paths)
		}
	}
	sections := map[string]string{}
	for _, part := range strings.Split(ref, "\n### ")[1:] {
		head, body, _ := strings.Cut(part, "\n")
		sections[strings.Trim(head, "`")] = body
	}
	for _, c := range cmds {
		body, ok := sections[c.CommandPath()]
		if !ok {
			t.Errorf("%s is not in the reference", c.CommandPath())
			continue
		}
		if !strings.Contains(body, c.Short) {
			t.Errorf("%s: the reference lacks its Short %q", c.CommandPath(), c.Short)
		}
		for _, a := range c.Aliases {
			if !strings.Contains(body, "`"+c.Parent().CommandPath()+" "+a+"`") {
				t.Errorf("%s: the reference lacks its alias %s", c.CommandPath(), a)
			}
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			if !strings.Contains(body, "--"+f.Name) || !strings.Contains(body, f.Usage) {
				t.Errorf("%s: the reference lacks --%s and its usage", c.CommandPath(), f.Name)
			}
			if f.Shorthand != "" && !strings.Contains(body, "`-"+f.Shorthand+", --"+f.Name) {
				t.Errorf("%s: the reference lacks -%s", c.CommandPath(), f.Shorthand)
			}
		})
		for _, l := range strings.Split(strings.TrimSpace(c.Example), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.Contains(body, l+"\n") {
				t.Errorf("%s: the reference lacks the example %q", c.CommandPath(), l)
			}
		}
	}
	if len(sections) != len(cmds)+1 { // and Global flags
		var extra []string
		for s := range sections {
			if s != "Global flags" && !slices.Contains(paths, s) {
				extra = append(extra, s)
			}
		}
		t.Errorf("the reference has %d sections for %d commands; not shown commands: %v", len(sections)-1, len(cmds), extra)
	}
	for _, f := range []string{"--config", "--debug"} {
		if !strings.Contains(sections["Global flags"], f) {
			t.Errorf("Global flags lacks %s", f)
		}
	}
	for _, c := range root.Commands() {
		if c.Hidden && strings.Contains(ref, "### `"+c.CommandPath()+"`") {
			t.Errorf("hidden %s is in the reference", c.CommandPath())
		}
	}
}

func TestSkillFrontMatter(t *testing.T) {
	rendered := renderedSkill(t)
	rest, ok := strings.CutPrefix(rendered, "---\n")
	fm, body, ok2 := strings.Cut(rest, "\n---\n")
	if !ok || !ok2 {
		t.Fatalf("no front matter:\n%.200s", rendered)
	}
	var m map[string]string
	if err := yaml.Unmarshal([]byte(fm), &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["name"] != "marina" {
		t.Errorf("front matter = %v, want name: marina and a description alone", m)
	}
	if d := m["description"]; d == "" || len(d) > 1024 || strings.ContainsAny(d, "<>") {
		t.Errorf("description (%d bytes) must be 1-1024 bytes with no tags: %q", len(d), d)
	}
	for _, h := range []string{"## What marina is", "## Where things live", "## Troubleshooting", "## Safety notes for an agent", "## Command reference"} {
		if !strings.Contains(body, "\n"+h+"\n") {
			t.Errorf("the skill lacks %q", h)
		}
	}
	for _, w := range []string{"~/.marina", "~/.kube/marina", "~/.<vm>.docker.sock", "marina status", "marina doctor", "marina kubeconfig merge", "marina cluster verify", "marina shell --", "--dry-run", "-y"} {
		if !strings.Contains(body, w) {
			t.Errorf("the skill lacks %q", w)
		}
	}
	if strings.Contains(body, "{{") || strings.Contains(body, "<no value>") {
		t.Error("the template left a placeholder")
	}
	if s2, _ := skillFile(); s2 != rendered {
		t.Error("two renderings differ")
	}
}

// withUmask runs the rest of the test under umask m.
func withUmask(t *testing.T, m int) {
	old := syscall.Umask(m)
	t.Cleanup(func() { syscall.Umask(old) })
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode()
}

// skillHomeWithBadConfig is a private HOME whose marina config would make
// any command that reads it fail, and no limactl on PATH.
func skillHomeWithBadConfig(t *testing.T) string {
	home := isolate(t)
	writeFile(t, filepath.Join(home, ".marina", "config.yaml"), "vm:\n\tname: [broken\n")
	if _, _, code := runCLI(t, "config", "show"); code == 0 {
		t.Fatal("the broken config loads: the skill tests would not show that skill reads none")
	}
	return home
}

func TestSkillInstall(t *testing.T) {
	rendered := renderedSkill(t)
	for _, umask := range []int{0o077, 0o000} {
		t.Run(fmt.Sprintf("umask %03o", umask), func(t *testing.T) {
			home := skillHomeWithBadConfig(t)
			withUmask(t, umask)
			path := filepath.Join(home, ".claude", "skills", "marina", "SKILL.md")
			out, errs, code := runCLI(t, "skill", "install")
			if code != 0 || !strings.Contains(out, "Wrote the marina skill to "+path) {
				t.Fatalf("skill install: %d %q %q", code, out, errs)
			}
			b, err := os.ReadFile(path)
			if err != nil || string(b) != rendered {
				t.Fatalf("the file is not the skill (%v)", err)
			}
			if m := mode(t, path); m != 0o644 {
				t.Errorf("SKILL.md mode %v, want 0644", m)
			}
			for _, d := range []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))} {
				if m := mode(t, d); m != os.ModeDir|0o755 {
					t.Errorf("%s mode %v, want drwxr-xr-x", d, m)
				}
			}
			if m := mode(t, filepath.Join(home, ".claude")); m != os.ModeDir|0o700 {
				t.Errorf("~/.claude mode %v, want drwx------", m)
			}
			if out, _, code := runCLI(t, "skill", "install"); code != 0 || !strings.Contains(out, "already: nothing to do") {
				t.Errorf("second install: %d %q", code, out)
			}
		})
	}

	t.Run("a file that is there is kept without -f, replaced with -f", func(t *testing.T) {
		home := skillHomeWithBadConfig(t)
		withUmask(t, 0o077)
		path := skill.Path(home)
		mine := "---\nname: marina\ndescription: my own notes\n---\nkeep me\n"
		writeFile(t, path, mine)
		dir := filepath.Dir(path)
		if err := os.Chmod(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		before := homeFiles(t, home)

		out, errs, code := runCLI(t, "skill", "install")
		if code != 0 || !strings.Contains(out, path+" is there with other content and was kept") || !strings.Contains(out, "marina skill install -f replaces it") {
			t.Errorf("install over a file: %d %q %q", code, out, errs)
		}
		out, _, code = runCLI(t, "skill", "install", "-f", "--dry-run")
		if code != 0 || !strings.Contains(out, "Would replace "+path) {
			t.Errorf("install -f --dry-run: %d %q", code, out)
		}
		if after := homeFiles(t, home); !sameTree(before, after) {
			t.Errorf("the home changed without -f: %v → %v", before, after)
		}
		if m := mode(t, path); m != 0o600 {
			t.Errorf("the kept file's mode changed to %v", m)
		}

		out, errs, code = runCLI(t, "skill", "install", "--force")
		if code != 0 || !strings.Contains(out, "Replaced "+path) {
			t.Fatalf("install --force: %d %q %q", code, out, errs)
		}
		if b, _ := os.ReadFile(path); string(b) != rendered {
			t.Error("-f did not write the skill")
		}
		if m := mode(t, path); m != 0o644 {
			t.Errorf("replaced SKILL.md mode %v, want 0644", m)
		}
		if m := mode(t, dir); m != os.ModeDir|0o750 {
			t.Errorf("the folder that was there changed mode to %v", m)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Errorf("left in %s: %v", dir, entries)
		}
	})

	// S12: a link at the skill's file or at its folder is refused, with
	// or without -f: nothing is written through it.
	t.Run("a link at SKILL.md or at its folder is refused", func(t *testing.T) {
		home := skillHomeWithBadConfig(t)
		path := skill.Path(home)
		target := filepath.Join(home, "dotfiles", "SKILL.md")
		writeFile(t, target, "dotfiles\n")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"skill", "install"}, {"skill", "install", "-f"}} {
			if _, errs, code := runCLI(t, args...); code != 1 || !strings.Contains(errs, path+" is a symbolic link") {
				t.Errorf("%v over a link: exit %d %q", args, code, errs)
			}
		}
		if b, _ := os.ReadFile(target); string(b) != "dotfiles\n" || mode(t, path)&os.ModeSymlink == 0 {
			t.Errorf("the link or its target changed: %q", b)
		}

		home = skillHomeWithBadConfig(t)
		path = skill.Path(home)
		elsewhere := filepath.Join(home, "Documents")
		if err := os.MkdirAll(elsewhere, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, filepath.Dir(path)); err != nil {
			t.Fatal(err)
		}
		if _, errs, code := runCLI(t, "skill", "install", "-f"); code != 1 || !strings.Contains(errs, filepath.Dir(path)+" is a symbolic link, not a folder") {
			t.Errorf("install -f into a linked folder: exit %d %q", code, errs)
		}
		if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
			t.Errorf("written through the linked folder: %v", ents)
		}
	})

	t.Run("a folder there is an error", func(t *testing.T) {
		home := skillHomeWithBadConfig(t)
		path := skill.Path(home)
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, errs, code := runCLI(t, "skill", "install", "-f"); code != 1 || !strings.Contains(errs, "is a folder") {
			t.Errorf("install -f over a folder: %d %q", code, errs)
		}
	})

	t.Run("--print and --dry-run write nothing", func(t *testing.T) {
		home := skillHomeWithBadConfig(t)
		before := homeFiles(t, home)
		out, errs, code := runCLI(t, "skill", "install", "--print")
		if code != 0 || out != rendered || errs != "" {
			t.Errorf("--print: exit %d, stderr %q, stdout is the skill: %v", code, errs, out == rendered)
		}
		out, _, code = runCLI(t, "skill", "install", "--dry-run")
		if code != 0 || !strings.Contains(out, "Would write the marina skill to "+skill.Path(home)) {
			t.Errorf("--dry-run: %d %q", code, out)
		}
		if after := homeFiles(t, home); !sameTree(before, after) {
			t.Errorf("wrote to the home: %v → %v", before, after)
		}
		if _, err := os.Lstat(filepath.Join(home, ".claude")); !os.IsNotExist(err) {
			t.Errorf("~/.claude exists: %v", err)
		}
	})

	t.Run("path", func(t *testing.T) {
		home := skillHomeWithBadConfig(t)
		want := filepath.Join(home, ".claude", "skills", "marina", "SKILL.md")
		out, errs, code := runCLI(t, "--config", filepath.Join(home, "missing.yaml"), "skill", "path")
		if code != 0 || out != want+"\n" || !strings.Contains(errs, "not installed yet") {
			t.Errorf("skill path: %d %q %q", code, out, errs)
		}
		if _, _, code := runCLI(t, "skill", "install"); code != 0 {
			t.Fatal("install failed")
		}
		if out, errs, code := runCLI(t, "skill", "path"); code != 0 || out != want+"\n" || errs != "" {
			t.Errorf("skill path once installed: %d %q %q", code, out, errs)
		}
	})
}

// homeFiles is every file, folder and link under root, with its mode and,
// for a file, its content.
func homeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out[p] = info.Mode().String()
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] += " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree reports whether two trees are equal.
func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
