//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// kubeadmConfig is what the fake kubeadm reads from the multi-document
// file kind writes to /kind/kubeadm.conf (kubeadm.k8s.io v1beta4, or
// v1beta3, whose extraArgs are maps rather than lists).
type kubeadmConfig struct {
	// ClusterConfiguration
	ClusterName          string
	ControlPlaneEndpoint string // host:port
	CertSANs             []string
	APIServerExtraArgs   map[string]string
	ServiceSubnet        string
	PodSubnet            string
	DNSDomain            string
	// InitConfiguration (or JoinConfiguration for join)
	NodeName         string
	AdvertiseAddress string
	BindPort         int
	KubeletExtraArgs map[string]string
	Taints           []taint
	TaintsSet        bool // taints: present (even empty) in the config
	BootstrapToken   string
	// JoinConfiguration
	JoinEndpoint     string
	JoinToken        string
	JoinControlPlane bool
	// The ClusterConfiguration document as written, for kubeadm-config.
	ClusterConfigurationYAML string
}

type taint struct{ Key, Value, Effect string }

type doc = map[string]any

func loadKubeadmConfig(path string, join bool) (*kubeadmConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &kubeadmConfig{BindPort: 6443, DNSDomain: "cluster.local", ServiceSubnet: "10.96.0.0/12"}
	dec := yaml.NewDecoder(f)
	for {
		var d doc
		if err := dec.Decode(&d); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if d == nil {
			continue
		}
		switch str(d, "kind") {
		case "ClusterConfiguration":
			c.ClusterName = str(d, "clusterName")
			c.ControlPlaneEndpoint = str(d, "controlPlaneEndpoint")
			for _, s := range list(d, "apiServer", "certSANs") {
				if v, ok := s.(string); ok && v != "" {
					c.CertSANs = append(c.CertSANs, v)
				}
			}
			c.APIServerExtraArgs = args(get(d, "apiServer", "extraArgs"))
			if v := str(d, "networking", "serviceSubnet"); v != "" {
				c.ServiceSubnet = v
			}
			c.PodSubnet = str(d, "networking", "podSubnet")
			if v := str(d, "networking", "dnsDomain"); v != "" {
				c.DNSDomain = v
			}
			b, _ := yaml.Marshal(d)
			c.ClusterConfigurationYAML = string(b)
		case "InitConfiguration":
			c.AdvertiseAddress = str(d, "localAPIEndpoint", "advertiseAddress")
			if p, ok := get(d, "localAPIEndpoint", "bindPort").(int); ok && p > 0 {
				c.BindPort = p
			}
			if t := list(d, "bootstrapTokens"); len(t) > 0 {
				if m, ok := t[0].(doc); ok {
					c.BootstrapToken = str(m, "token")
				}
			}
			if !join {
				c.nodeRegistration(d)
			}
		case "JoinConfiguration":
			c.JoinEndpoint = str(d, "discovery", "bootstrapToken", "apiServerEndpoint")
			c.JoinToken = str(d, "discovery", "bootstrapToken", "token")
			if cp, ok := get(d, "controlPlane").(doc); ok {
				c.JoinControlPlane = true
				if v := str(cp, "localAPIEndpoint", "advertiseAddress"); v != "" {
					c.AdvertiseAddress = v
				}
			}
			if join {
				c.nodeRegistration(d)
			}
		}
	}
	return c, nil
}

func (c *kubeadmConfig) nodeRegistration(d doc) {
	c.NodeName = str(d, "nodeRegistration", "name")
	c.KubeletExtraArgs = args(get(d, "nodeRegistration", "kubeletExtraArgs"))
	if ts, ok := get(d, "nodeRegistration", "taints").([]any); ok {
		c.TaintsSet = true
		for _, t := range ts {
			if m, ok := t.(doc); ok {
				c.Taints = append(c.Taints, taint{Key: str(m, "key"), Value: str(m, "value"), Effect: str(m, "effect")})
			}
		}
	}
}

// nodeLabels parses kubelet's --node-labels value (k=v,k2=v2).
func (c *kubeadmConfig) nodeLabels() map[string]string {
	labels := map[string]string{}
	for _, kv := range strings.Split(c.KubeletExtraArgs["node-labels"], ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		labels[k] = v
	}
	return labels
}

func get(d doc, path ...string) any {
	var cur any = d
	for _, p := range path {
		m, ok := cur.(doc)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func str(d doc, path ...string) string {
	switch v := get(d, path...).(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func list(d doc, path ...string) []any {
	l, _ := get(d, path...).([]any)
	return l
}

// args reads extraArgs in either form: v1beta4's [{name, value}] or
// v1beta3's {name: value}.
func args(v any) map[string]string {
	out := map[string]string{}
	switch a := v.(type) {
	case []any:
		for _, e := range a {
			if m, ok := e.(doc); ok {
				out[str(m, "name")] = str(m, "value")
			}
		}
	case doc:
		for k := range a {
			out[k] = str(a, k)
		}
	}
	return out
}

// flags renders a name → value map as sorted --name=value flags, leaving
// out empty values (kind writes runtime-config: "" by default).
func flags(m map[string]string) []string {
	var out []string
	for k, v := range m {
		if v != "" {
			out = append(out, "--"+k+"="+v)
		}
	}
	sort.Strings(out)
	return out
}
