// Package dockerctx keeps marina's Docker context: a context in Docker's
// own store (<docker config>/contexts) whose docker endpoint is the VM's
// forwarded socket, and config.json's currentContext. Both are read and
// written with the docker CLI's own packages (cli/context/store,
// cli/context/docker, cli/config), so the files are those `docker context
// create` and `docker context use` write, with the same modes.
//
// A context marina made carries ManagedKey in its metadata. A context of
// the same name without it belongs to someone else and is never written.
//
// The commands that point docker at the VM live here too: docker-env
// (Env: the shell lines) and docker-context (UseContext).
package dockerctx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/containerd/errdefs"
	dockerconfig "github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/configfile"
	"github.com/docker/cli/cli/context/docker"
	"github.com/docker/cli/cli/context/store"

	"github.com/bcollard/marina/internal/fileutil"
)

const (
	// Default is the docker CLI's built-in context (DOCKER_HOST, else the
	// local socket); config.json names it by leaving currentContext out.
	Default = "default"
	// ManagedKey is the metadata field that marks a context marina made;
	// its value is ManagedValue. The docker CLI keeps fields it does not
	// know through `docker context update`.
	ManagedKey   = "marina.dev/managed-by"
	ManagedValue = "marina"
	// EnvConfig is the variable that moves Docker's config folder.
	EnvConfig = dockerconfig.EnvOverrideConfigDir
)

// Dir is Docker's config folder: $DOCKER_CONFIG, else ~/.docker.
func Dir(getenv func(string) string, home string) string {
	if d := getenv(EnvConfig); d != "" {
		return filepath.Clean(d)
	}
	return filepath.Join(home, ".docker")
}

// Context is one context of Docker's store.
type Context struct {
	Name        string
	Description string
	// Host is its docker endpoint ("" when it has none).
	Host          string
	SkipTLSVerify bool
	// Marina is set on a context marina made.
	Marina bool

	meta store.Metadata
}

// State is Docker's config folder as it bears on one context name.
type State struct {
	Dir        string
	ConfigFile string // config.json
	// Current is config.json's current context (Default when it names
	// none).
	Current string
	// Named is the context of the name asked for, and CurrentContext the
	// current one; nil when there is no such context (or it is Default).
	Named, CurrentContext *Context

	store *store.ContextStore
	cf    *configfile.ConfigFile
	raw   []byte // config.json as read; nil when there is none
}

func storeConfig() store.Config {
	// Context metadata is read as a plain map, so that every field of
	// another tool's survives an update.
	return store.NewConfig(nil, store.EndpointTypeGetter(docker.DockerEndpoint, func() any { return &docker.EndpointMeta{} }))
}

// Read reads dir's config.json and its contexts called name and current.
func Read(dir, name string) (*State, error) {
	s := &State{Dir: dir, ConfigFile: filepath.Join(dir, dockerconfig.ConfigFileName)}
	raw, err := fileutil.ReadRegular(s.ConfigFile, 16<<20)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A link to nothing reads as missing, but writing the config would
		// create a file wherever the link points (S10).
		if to, lerr := os.Readlink(s.ConfigFile); lerr == nil {
			return nil, fmt.Errorf("Docker's config %s is a link to %s, which does not exist: marina would create a file there, so it changed nothing; remove the link (rm %s) or restore what it points at, then run it again", s.ConfigFile, to, s.ConfigFile)
		}
	case err != nil:
		return nil, fmt.Errorf("read Docker's config %s: %w", s.ConfigFile, err)
	default:
		s.raw = raw
	}
	// The docker CLI's own reading: what it cannot read, marina does not
	// rewrite.
	if s.cf, err = dockerconfig.Load(dir); err != nil {
		return nil, fmt.Errorf("%w: fix or move %s (docker itself cannot read it)", err, s.ConfigFile)
	}
	s.Current = s.cf.CurrentContext
	if s.Current == "" {
		s.Current = Default
	}
	s.store = store.New(filepath.Join(dir, "contexts"), storeConfig())
	if s.Named, err = s.context(name); err != nil {
		return nil, err
	}
	if s.CurrentContext, err = s.context(s.Current); err != nil {
		return nil, err
	}
	return s, nil
}

// context reads context name from the store: nil when there is none.
func (s *State) context(name string) (*Context, error) {
	if name == Default {
		return nil, nil
	}
	m, err := s.store.GetMetadata(name)
	if errdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("Docker context %s: %w: fix or remove it (`docker context rm %s`)", name, err, name)
	}
	c := &Context{Name: name, meta: m}
	if md, ok := m.Metadata.(map[string]any); ok {
		c.Description, _ = md["Description"].(string)
		v, _ := md[ManagedKey].(string)
		c.Marina = v == ManagedValue
	}
	if ep, ok := m.Endpoints[docker.DockerEndpoint].(docker.EndpointMeta); ok {
		c.Host, c.SkipTLSVerify = ep.Host, ep.SkipTLSVerify
	}
	return c, nil
}

// Path is where context name's metadata is kept.
func (s *State) Path(name string) string {
	return filepath.Join(s.store.GetStorageInfo(name).MetadataPath, "meta.json")
}

// CheckName checks name is one Docker takes for a context of its own.
func CheckName(name string) error { return store.ValidateContextName(name) }

// Plan is what Ensure would change.
type Plan struct {
	Name, Host, Description string
	// Create: there is no context of the name. Otherwise, when Write is
	// set, marina's context has another endpoint (Was).
	Create, Write bool
	Was           string
	// Use: config.json's currentContext becomes Name (it is From now).
	Use  bool
	From string
	// Adopt: the context is the one klimax made for the VM; Write marks
	// it as marina's, its endpoint and the rest of it as they are.
	Adopt bool
}

// None reports whether the plan changes nothing.
func (p Plan) None() bool { return !p.Write && !p.Use }

// ForeignError is a context of marina's name that marina did not make.
type ForeignError struct {
	Context *Context
	// Reason, when set, says why a context with marina's endpoint is not
	// taken for klimax's.
	Reason string
}

func (e *ForeignError) Error() string {
	msg := fmt.Sprintf("Docker context %s exists and was not made by marina (its docker endpoint is %s)", e.Context.Name, orNone(e.Context.Host))
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Ensure plans context name with docker endpoint host, current; the
// context of that name must be marina's, or absent.
func (s *State) Ensure(name, host, description string) (Plan, error) {
	if err := CheckName(name); err != nil {
		return Plan{}, err
	}
	p := Plan{Name: name, Host: host, Description: description, From: s.Current, Use: s.Current != name}
	switch c := s.Named; {
	case c == nil:
		p.Create, p.Write = true, true
	case !c.Marina:
		return Plan{}, &ForeignError{Context: c}
	case c.Host != host || c.SkipTLSVerify:
		p.Write, p.Was = true, c.Host
	}
	return p, nil
}

// AdoptPlan plans making context name marina's when it is the one klimax
// made for the same VM (`docker context create <vm> --docker
// host=unix://…`): a context marina did not make whose docker endpoint
// is host, with no TLS material and no skip-tls-verify. Apply then marks
// it as marina's and keeps everything else (its description, its other
// fields); the current context stays as it is. A context of the name that
// marina made already, or none, is nothing to do; one with another
// endpoint is a *ForeignError, as for Ensure.
func (s *State) AdoptPlan(name, host string) (Plan, error) {
	if err := CheckName(name); err != nil {
		return Plan{}, err
	}
	// Apply writes the context Read found: it must be this one.
	c := s.Named
	if c != nil && c.Name != name {
		return Plan{}, fmt.Errorf("Docker's contexts were read for %s, not %s", c.Name, name)
	}
	if c == nil {
		there, err := s.context(name)
		if err != nil {
			return Plan{}, err
		}
		if there != nil {
			return Plan{}, fmt.Errorf("Docker's contexts were not read for %s", name)
		}
	}
	p := Plan{Name: name, Host: host, From: s.Current}
	switch {
	case c == nil || c.Marina:
		return p, nil
	case c.Host != host:
		return Plan{}, &ForeignError{Context: c}
	case c.SkipTLSVerify:
		return Plan{}, &ForeignError{Context: c, Reason: "it skips TLS verification, which klimax's context did not"}
	}
	files, err := s.store.ListTLSFiles(name)
	if err != nil {
		return Plan{}, fmt.Errorf("Docker context %s: %w", name, err)
	}
	for ep, f := range files {
		if len(f) > 0 {
			return Plan{}, &ForeignError{Context: c, Reason: fmt.Sprintf("its %s endpoint holds TLS files, which klimax's context did not", ep)}
		}
	}
	p.Write, p.Adopt, p.Was = true, true, c.Host
	return p, nil
}

// Apply makes what p plans: the context's metadata first, then
// config.json, so that the current context is never one that is missing.
func (s *State) Apply(p Plan) error {
	if p.None() {
		return nil
	}
	// A new config folder is private, as docker makes it when it saves
	// config.json (the store alone would make it 0755).
	if _, err := os.Stat(s.Dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(s.Dir, 0o700); err != nil {
			return fmt.Errorf("create Docker's config folder: %w", err)
		}
	}
	if p.Write {
		m := store.Metadata{Name: p.Name, Endpoints: map[string]any{}}
		md := map[string]any{}
		if c := s.Named; c != nil {
			// An update keeps what else the context holds, as `docker
			// context update --docker host=…` does.
			m = c.meta
			if old, ok := m.Metadata.(map[string]any); ok {
				for k, v := range old {
					md[k] = v
				}
			}
			if m.Endpoints == nil {
				m.Endpoints = map[string]any{}
			}
		} else if p.Description != "" {
			md["Description"] = p.Description
		}
		md[ManagedKey] = ManagedValue
		m.Metadata = md
		m.Endpoints[docker.DockerEndpoint] = docker.EndpointMeta{Host: p.Host}
		if err := s.store.CreateOrUpdate(m); err != nil {
			return fmt.Errorf("write Docker context %s: %w", p.Name, err)
		}
		// A unix socket takes no TLS: what the old endpoint had goes.
		if err := s.store.ResetEndpointTLSMaterial(p.Name, docker.DockerEndpoint, nil); err != nil {
			return fmt.Errorf("write Docker context %s: %w", p.Name, err)
		}
	}
	if p.Use {
		return s.use(p.Name)
	}
	return nil
}

// UseDefault makes Default the current context.
func (s *State) UseDefault() error {
	if s.Current == Default {
		return nil
	}
	return s.use(Default)
}

// use sets config.json's currentContext to name (Default: none), as
// `docker context use` does.
func (s *State) use(name string) error {
	value := name
	if name == Default {
		value = ""
	}
	if s.cf.CurrentContext == value {
		return nil
	}
	s.cf.CurrentContext = value
	if err := s.save(); err != nil {
		return fmt.Errorf("write Docker's config %s: %w", s.ConfigFile, err)
	}
	s.Current = name
	return nil
}

// save writes config.json through the docker CLI's configfile: Save itself
// (a temporary file renamed over the old, its mode and owner copied, a
// symlink followed), unless the file holds top-level fields that package
// does not know and would drop; those are kept, after its own.
func (s *State) save() error {
	extra, err := unknownFields(s.raw)
	if err != nil {
		return err
	}
	if len(extra) == 0 {
		return s.cf.Save()
	}
	var buf bytes.Buffer
	if err := s.cf.SaveToWriter(&buf); err != nil {
		return err
	}
	out := bytes.TrimRight(buf.Bytes(), "\n")
	if !bytes.HasSuffix(out, []byte("}")) {
		return errors.New("docker's configfile wrote no JSON object")
	}
	out = bytes.TrimRight(out[:len(out)-1], "\n\t ")
	for _, f := range extra {
		var v bytes.Buffer
		if err := json.Indent(&v, f.value, "\t", "\t"); err != nil {
			return err
		}
		key, _ := json.Marshal(f.key)
		out = fmt.Appendf(out, ",\n\t%s: %s", key, v.Bytes())
	}
	out = append(out, "\n}"...)
	// A symlink is followed, as Save does (the file was read: it exists).
	path := s.ConfigFile
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	perm := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm()
	}
	return fileutil.WriteAtomic(path, out, perm)
}

type field struct {
	key   string
	value json.RawMessage
}

// unknownFields are the top-level fields of config.json that docker's
// configfile does not know, in the file's order.
func unknownFields(raw []byte) ([]field, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	known := map[string]bool{}
	t := reflect.TypeFor[configfile.ConfigFile]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = t.Field(i).Name
		}
		// encoding/json matches keys without regard to case.
		known[strings.ToLower(name)] = true
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("it is not a JSON object")
	}
	var out []field
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		if !known[strings.ToLower(key)] {
			out = append(out, field{key, v})
		}
	}
	return out, nil
}
