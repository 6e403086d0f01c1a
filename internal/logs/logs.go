// Package logs is marina logs: one archive for a bug report, with what
// marina, the VM, Docker and kind's nodes say, and no secret in it.
package logs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/doctor"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/status"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/version"
	"github.com/bcollard/marina/internal/vm"
)

// Options are the flags of marina logs.
type Options struct {
	// Output is the archive to write; "" names one in the current folder.
	Output string
	// Clusters are the clusters whose nodes kind exports; nil: every
	// running one.
	Clusters []string
}

// Written is what marina logs wrote.
type Written struct {
	Path string `json:"path"`
	// Files is the archive's table of contents.
	Files []string `json:"files"`
	Bytes int64    `json:"bytes"`
	// Redacted counts the secrets taken out.
	Redacted int `json:"redacted"`
}

// Root is the folder every file of the archive is in.
const Root = "marina-logs"

// Limits on what the VM sends back: a whole report, and one file of it.
const (
	maxArchive = 512 << 20
	maxFile    = 64 << 20
)

// Collect writes the archive: marina's version, the config (passwords
// masked), status and doctor as -o json gives them, then what the VM says
// (one guest round trip: guest.Logs). status and doctor make their own
// round trips, as they do alone. The file is made new (an existing one is
// never replaced) with mode 0600.
func Collect(ctx context.Context, e *session.Env, opts Options) (*Written, error) {
	for _, n := range opts.Clusters {
		if err := cluster.CheckName(n); err != nil {
			return nil, err
		}
	}
	out := opts.Output
	if out == "" {
		out = "marina-logs-" + time.Now().Format("20060102-150405") + ".tar.gz"
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%s exists: marina logs does not replace a file; give another with -o", out)
	}
	if err != nil {
		return nil, err
	}
	a := &archive{gz: gzip.NewWriter(f)}
	a.tw = tar.NewWriter(a.gz)
	err = collect(ctx, e, opts, a)
	if cerr := a.close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
		return nil, err
	}
	st, err := os.Stat(out)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(out)
	return &Written{Path: abs, Files: a.files, Bytes: st.Size(), Redacted: a.redacted}, nil
}

func collect(ctx context.Context, e *session.Env, opts Options, a *archive) error {
	secrets := &scrubber{}
	cfg, cfgErr := config.Load(e.Paths)
	// The passwords even of a config that does not validate: parsed, not
	// checked.
	if data, err := fileutil.ReadRegular(e.Paths.Config, config.MaxFileSize); err == nil {
		if parsed, _, err := config.Parse(e.Paths.Config, data); err == nil {
			for _, m := range parsed.Registries.Mirrors {
				secrets.add(m.Password)
			}
		}
	}
	for _, m := range cfg.Registries.Mirrors {
		secrets.add(m.Password)
	}
	if key, err := session.LoadLabelKey(e.Paths); err == nil && !key.Fresh {
		secrets.add(hex.EncodeToString(key.Key))
		if pw, err := dns.NewPasswords(key.Key); err == nil {
			secrets.add(pw.Root().Password)
			secrets.add(pw.Reader().Password)
			secrets.passwords = &pw
		}
	}
	a.scrub = secrets

	a.add("version.txt", []byte(version.String()+"\n"))
	if cfgErr != nil {
		a.add("config-error.txt", []byte(cfgErr.Error()+"\n"))
	} else if b, err := config.Marshal(cfg.Redacted()); err == nil {
		a.add("config.yaml", b)
	}
	// status and doctor run inside this step: their own progress and
	// warnings stay off the terminal (their findings are in the files).
	e.UI.Start("Reading status and doctor")
	loud := e.UI
	e.UI = ui.New(io.Discard, false, false)
	a.addJSON(ctx, "status", func(ctx context.Context) (any, error) { return status.Get(ctx, e) })
	a.addJSON(ctx, "doctor", func(ctx context.Context) (any, error) { return doctor.Run(ctx, e, doctor.Options{}) })
	e.UI = loud
	e.UI.End(true)

	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnlyQuiet, Clusters: true})
	if err != nil {
		a.add("vm-error.txt", []byte(err.Error()+"\n"))
		return nil
	}
	defer s.Close()
	if !s.Running() {
		a.add("vm-error.txt", []byte("the VM is not running: nothing was read from it\n"))
		return nil
	}
	names, err := chooseClusters(s, opts.Clusters)
	if err != nil {
		return err
	}
	for _, n := range names {
		if secrets.passwords != nil {
			if c, err := secrets.passwords.Cluster(n); err == nil {
				secrets.add(c.Password)
			}
		}
	}
	script, err := guest.Logs(names)
	if err != nil {
		return err
	}
	label := "Reading the VM's logs"
	if len(names) > 0 {
		label += " and kind's export of " + strings.Join(names, ", ")
	}
	// A VM that cannot say is what a report is for: its error goes into
	// the archive, which keeps what was read before.
	err = e.Step(label, "", func() error {
		res, err := s.Guest.Run(ctx, vm.Script{Name: "gather logs", Body: script, Root: true})
		if err == nil {
			err = a.addTar(res.Stdout)
		}
		return err
	})
	if err != nil {
		a.add("vm-error.txt", []byte(err.Error()+"\n"))
		e.UI.Warnf("the VM's logs could not all be read (%v): the archive says so in vm-error.txt", err)
	}
	return ctx.Err()
}

// chooseClusters are the clusters kind exports: those named (each must
// exist and run), or every running one.
func chooseClusters(s *session.Session, named []string) ([]string, error) {
	if len(named) == 0 {
		var out []string
		for _, c := range s.Clusters {
			if c.Running() {
				out = append(out, c.Name)
			}
		}
		return out, nil
	}
	for _, n := range named {
		c, ok := cluster.Find(s.Clusters, n)
		if !ok {
			return nil, fmt.Errorf("there is no cluster %s (clusters: %s)", n, strings.Join(ui.OrNone(cluster.Names(s.Clusters)), ", "))
		}
		if !c.Running() {
			return nil, fmt.Errorf("cluster %s is not running, and kind exports a running cluster's logs: `marina cluster start %s`, or leave it out", n, n)
		}
	}
	return ui.Dedupe(named), nil
}

// archive is the tar.gz being written, every file scrubbed on its way in.
type archive struct {
	gz       *gzip.Writer
	tw       *tar.Writer
	scrub    *scrubber
	files    []string
	redacted int
}

func (a *archive) add(name string, data []byte) {
	if a.scrub != nil {
		var n int
		data, n = a.scrub.clean(data)
		a.redacted += n
	}
	full := path.Join(Root, name)
	hdr := &tar.Header{Name: full, Mode: 0o600, Size: int64(len(data)), ModTime: time.Now(), Typeflag: tar.TypeReg}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return
	}
	if _, err := a.tw.Write(data); err == nil {
		a.files = append(a.files, full)
	}
}

// addJSON adds name.json, what get returns as -o json renders it, or
// name-error.txt with why it could not.
func (a *archive) addJSON(ctx context.Context, name string, get func(context.Context) (any, error)) {
	v, err := get(ctx)
	if v != nil {
		if b, jerr := json.MarshalIndent(v, "", "  "); jerr == nil {
			a.add(name+".json", append(b, '\n'))
		}
	}
	if err != nil {
		a.add(name+"-error.txt", []byte(err.Error()+"\n"))
	}
}

// addTar adds the regular files of the VM's gzipped tar under vm/ and
// clusters/. The VM wrote it, so every name is checked before it is used
// and every size is bounded.
func (a *archive) addTar(data []byte) error {
	if len(data) > maxArchive {
		return fmt.Errorf("the VM's logs are %s, more than marina takes (%s)", units.BytesSize(float64(len(data))), units.BytesSize(maxArchive))
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("the VM's logs are not a gzipped tar: %w", err)
	}
	tr := tar.NewReader(zr)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the VM's logs: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		top, _, _ := strings.Cut(name, "/")
		if !fs(name) || (top != "vm" && top != "clusters") {
			continue
		}
		if h.Size > maxFile {
			a.add(name+".skipped", fmt.Appendf(nil, "%s is %s, more than marina takes from one file\n", name, units.BytesSize(float64(h.Size))))
			continue
		}
		if total += h.Size; total > maxArchive {
			return fmt.Errorf("the VM's logs unpack to more than %s", units.BytesSize(maxArchive))
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxFile))
		if err != nil {
			return fmt.Errorf("read the VM's logs: %w", err)
		}
		a.add(name, b)
	}
}

// fs reports whether name is a plain relative path of the archive: no
// "..", no absolute path, each element a file name.
func fs(name string) bool {
	if name == "." || path.IsAbs(name) {
		return false
	}
	return !slices.ContainsFunc(strings.Split(name, "/"), func(el string) bool { return fileutil.CheckElement(el) != nil })
}

func (a *archive) close() error {
	return errors.Join(a.tw.Close(), a.gz.Close())
}

// scrubber takes secrets out of text: the ones marina knows (mirror
// passwords, the label key and the local DNS's passwords derived from it),
// in their plain and base64 forms, and any private key, kubeconfig
// credential, token or password the text shows by its form.
type scrubber struct {
	literals  [][]byte
	passwords *dns.Passwords
}

const redactedMark = "<redacted by marina>"

func (s *scrubber) add(secret string) {
	if len(secret) < 8 {
		// Shorter, it would be found inside other words ("kind" in
		// kind-control-plane), hiding them and giving itself away: such a
		// password is taken out by its form alone.
		return
	}
	for _, v := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawStdEncoding.EncodeToString([]byte(secret))} {
		if !slices.ContainsFunc(s.literals, func(b []byte) bool { return string(b) == v }) {
			s.literals = append(s.literals, []byte(v))
		}
	}
}

// The forms of a secret in text. A key named like one (…password, …token,
// …secret, …credential(s), …api-key, client-key-data) and its value: in
// YAML and flags (key: value, key=value, KEY=value, --key value) and in
// JSON ("key": "value"); an Authorization header as HTTP, JSON or Go's
// header dumps show it; a URL's password; a Docker config's "auth"; and
// any PEM private key. A value that ends in ":" is the next key of a Go
// struct dump (an empty field), not a value.
const secretKey = `[a-z0-9_.-]*(?:client-key-data|token|password|passwd|secret|credentials?|api[_-]?key)`

var (
	privateKey = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----`)
	forms      = []*regexp.Regexp{
		regexp.MustCompile(`(?i)(\b` + secretKey + `(?::[ \t]+|[ \t]*=[ \t]*))("[^"\n]*"|'[^'\n]*'|[^\s",}\]]+)`),
		regexp.MustCompile(`(?i)("` + secretKey + `"\s*:\s*)("[^"\n]*")`),
		regexp.MustCompile(`(?i)(--` + secretKey + `[a-z-]*[ \t]+)([^\s-]\S*)`),
		regexp.MustCompile(`(?i)("auth"\s*:\s*)("[^"\n]*")`),
		regexp.MustCompile(`(?i)(authorization"?\s*[:=]?\s*\[?"?\s*(?:basic|bearer)\s+)([^\s"\]]+)`),
		regexp.MustCompile(`(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@"]+:)([^@\s/"]+)(?:@)`),
	}
)

// clean is data without its secrets, and how many were taken out.
func (s *scrubber) clean(data []byte) ([]byte, int) {
	n := 0
	for _, l := range s.literals {
		if c := bytes.Count(data, l); c > 0 {
			n += c
			data = bytes.ReplaceAll(data, l, []byte(redactedMark))
		}
	}
	data = privateKey.ReplaceAllFunc(data, func([]byte) []byte { n++; return []byte(redactedMark) })
	for _, re := range forms {
		data = re.ReplaceAllFunc(data, func(m []byte) []byte {
			loc := re.FindSubmatchIndex(m)
			v := m[loc[4]:loc[5]]
			if bytes.Contains(v, []byte("<redacted")) || bytes.HasSuffix(v, []byte(":")) || len(bytes.Trim(v, `"'`)) == 0 {
				return m
			}
			n++
			out := append([]byte{}, m[:loc[4]]...)
			out = append(out, redactedMark...)
			return append(out, m[loc[5]:]...)
		})
	}
	return data, n
}
