package vm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	"gopkg.in/yaml.v3"
)

// Port mirroring is Lima forwarding every TCP port the guest listens on to
// the Mac's loopback. marina's template turns it off with one ignore rule
// (network.disablePortMirroring); an instance's lima.yaml says which way
// it was made or last edited.

// portRules is the part of a lima.yaml this file reads and writes.
type portRules struct {
	PortForwards []portRule `yaml:"portForwards" json:"portForwards"`
}

// portRule is one of Lima's portForwards rules, every field kept as it is
// so that an edit writes back what was read.
type portRule map[string]any

// rule is a portForwards rule as Lima's hostagent reads it, for the
// forwarding decision.
type rule struct {
	GuestIP           string `yaml:"guestIP"`
	GuestIPMustBeZero *bool  `yaml:"guestIPMustBeZero"`
	GuestPort         int    `yaml:"guestPort"`
	GuestPortRange    [2]int `yaml:"guestPortRange"`
	Proto             string `yaml:"proto"`
	Ignore            bool   `yaml:"ignore"`
	GuestSocket       string `yaml:"guestSocket"`
}

// defaults fills r as Lima's FillPortForwardDefaults does.
func (r *rule) defaults() {
	if r.Proto == "" {
		r.Proto = "any"
	}
	if r.GuestIP == "" {
		r.GuestIP = "127.0.0.1"
		if r.GuestIPMustBeZero != nil && *r.GuestIPMustBeZero {
			r.GuestIP = "0.0.0.0"
		}
	}
	if r.GuestIPMustBeZero == nil {
		zero := r.GuestIP == "0.0.0.0"
		r.GuestIPMustBeZero = &zero
	}
	if r.GuestPortRange == [2]int{} {
		r.GuestPortRange = [2]int{1, 65535}
		if r.GuestPort != 0 {
			r.GuestPortRange = [2]int{r.GuestPort, r.GuestPort}
		}
	}
}

// matches reports whether r applies to a TCP listener on the guest's
// 127.0.0.1 at port, as Lima's hostagent matches rules
// (forwardingAddresses): by protocol, port range and address, where a
// rule for 0.0.0.0 covers 127.0.0.1 only with guestIPMustBeZero false.
func (r rule) matches(port int) bool {
	if r.GuestSocket != "" || (r.Proto != "any" && r.Proto != "tcp") {
		return false
	}
	if port < r.GuestPortRange[0] || port > r.GuestPortRange[1] {
		return false
	}
	ip, err := netip.ParseAddr(r.GuestIP)
	if err != nil {
		return false
	}
	return ip == netip.MustParseAddr("127.0.0.1") || (ip.IsUnspecified() && !*r.GuestIPMustBeZero)
}

// PortMirroring reports whether Lima mirrors to the Mac's 127.0.0.1 every
// one of ports that a guest process listens on at its own 127.0.0.1, for
// an instance made from limaYAML: what a cluster published on the VM's
// loopback needs. Lima takes the first rule that matches a listener (an
// ignore rule: not forwarded); after the instance's rules it adds one that
// forwards every port of 127.0.0.1.
func PortMirroring(limaYAML []byte, ports []int) (bool, error) {
	var y struct {
		PortForwards []rule `yaml:"portForwards"`
	}
	if err := yaml.Unmarshal(limaYAML, &y); err != nil {
		return false, fmt.Errorf("read the instance's lima.yaml: %w", err)
	}
	for i := range y.PortForwards {
		y.PortForwards[i].defaults()
	}
	for _, p := range ports {
		for _, r := range y.PortForwards {
			if r.matches(p) {
				if r.Ignore {
					return false, nil
				}
				break
			}
		}
	}
	return true, nil
}

// Forwards reports whether Lima forwards port on the guest's 127.0.0.1 to
// the Mac's, for an instance made from limaYAML: the push registry's.
func Forwards(limaYAML []byte, port int) (bool, error) {
	return PortMirroring(limaYAML, []int{port})
}

// PortForwardsEdit is the limactl --set expression that gives an existing
// instance the portForwards of template (marina's rendering of the config
// now): Lima applies it to the stopped instance's lima.yaml as it starts,
// and validates the result as it does a new template.
func PortForwardsEdit(template []byte) (string, error) {
	var y portRules
	if err := yaml.Unmarshal(template, &y); err != nil {
		return "", fmt.Errorf("read marina's template: %w", err)
	}
	if y.PortForwards == nil {
		y.PortForwards = []portRule{}
	}
	// JSON is a yq literal; encoding it leaves no room for an injected
	// operator. Without HTML escaping: yq would keep "\u0026" as it is.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(y.PortForwards); err != nil {
		return "", err
	}
	return ".portForwards = " + strings.TrimSuffix(b.String(), "\n"), nil
}
