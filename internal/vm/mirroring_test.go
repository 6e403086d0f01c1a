package vm

import (
	"context"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/lima-vm/lima/v2/pkg/limayaml"
	"github.com/lima-vm/lima/v2/pkg/yqutil"

	"github.com/bcollard/marina/internal/config"
)

// The edit marina passes to limactl start --set turns one mode's instance
// into the other's: applied with Lima's own yq evaluation, the result is
// what Lima validates and what a VM made in the new mode has.
func TestPortForwardsEditSwitchesTheMode(t *testing.T) {
	for _, from := range []bool{true, false} {
		to := !from
		_, created := render(t, func(c *config.Config) { c.Network.DisablePortMirroring = from }, "arm64")
		wantY, want := render(t, func(c *config.Config) { c.Network.DisablePortMirroring = to }, "arm64")
		if m, err := PortMirroring(created, []int{7001}); err != nil || m != !from {
			t.Fatalf("disablePortMirroring=%v: PortMirroring = %v, %v", from, m, err)
		}
		edit, err := PortForwardsEdit(want)
		if err != nil {
			t.Fatal(err)
		}
		out, err := yqutil.EvaluateExpression(context.Background(), edit, created)
		if err != nil {
			t.Fatalf("Lima's yq refuses %s: %v", edit, err)
		}
		y, err := limayaml.Load(context.Background(), out, filepath.Join(t.TempDir(), "lima.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := limayaml.Validate(y, false); err != nil {
			t.Fatalf("Lima rejects the edited lima.yaml: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(y.PortForwards, wantY.PortForwards) {
			t.Errorf("%v → %v: portForwards\n%+v\nwant\n%+v", from, to, y.PortForwards, wantY.PortForwards)
		}
		if m, _ := PortMirroring(out, []int{7001}); m != !to {
			t.Errorf("after the edit to disablePortMirroring=%v: PortMirroring = %v", to, m)
		}
		// Nothing but portForwards changed.
		if d, err := TemplateDrift(created, out); err != nil || len(d) != 0 {
			t.Errorf("the edit changed %v (%v)", d, err)
		}
		if !strings.Contains(string(out), "provision") {
			t.Error("the edit lost the rest of the file")
		}
	}
}

// Lima's forwarding decision for a listener on the guest's 127.0.0.1: the
// first matching rule decides, a rule for 0.0.0.0 covers 127.0.0.1 only
// with guestIPMustBeZero false, and what no rule matches is forwarded.
func TestPortMirroringFollowsLimasRules(t *testing.T) {
	api := []int{7001, 7099}
	cases := []struct {
		yaml string
		want bool
	}{
		{"cpus: 4\n", true},
		{"portForwards:\n- guestSocket: /run/docker.sock\n  hostSocket: /x.sock\n", true},
		// marina's rule.
		{"portForwards:\n- guestIP: 0.0.0.0\n  guestIPMustBeZero: false\n  proto: any\n  ignore: true\n", false},
		// The known trap: without guestIPMustBeZero false, a 0.0.0.0 rule
		// leaves 127.0.0.1 listeners mirrored.
		{"portForwards:\n- guestIP: 0.0.0.0\n  guestPortRange: [1, 65535]\n  ignore: true\n", true},
		{"portForwards:\n- guestIP: 127.0.0.1\n  ignore: true\n", false},
		{"portForwards:\n- ignore: true\n", false},
		{"portForwards:\n- guestSocket: /run/docker.sock\n  hostSocket: /x.sock\n- ignore: true\n", false},
		{"portForwards:\n- guestPort: 80\n  hostPort: 8080\n- ignore: true\n", false},
		{"portForwards:\n- guestPort: 7099\n  ignore: true\n", false},
		// Other ports, UDP only, or a forward first: the API ports stay
		// mirrored.
		{"portForwards:\n- guestPortRange: [1, 1024]\n  ignore: true\n", true},
		{"portForwards:\n- proto: udp\n  ignore: true\n", true},
		{"portForwards:\n- guestPortRange: [7000, 7100]\n  hostIP: 127.0.0.1\n- ignore: true\n", true},
	}
	for _, c := range cases {
		got, err := PortMirroring([]byte(c.yaml), api)
		if err != nil || got != c.want {
			t.Errorf("%q: %v, %v; want %v", c.yaml, got, err, c.want)
		}
	}
	if _, err := PortMirroring([]byte("portForwards: {"), api); err == nil {
		t.Error("a broken lima.yaml was read")
	}
}

// Characters JSON would escape for HTML reach Lima unchanged.
func TestPortForwardsEditKeepsEveryCharacter(t *testing.T) {
	home := `/Users/a&b <"q"> \é`
	tmpl := []byte("portForwards:\n- guestSocket: /run/docker.sock\n  hostSocket: " + strconv.Quote(home+"/.marina.docker.sock") + "\n")
	edit, err := PortForwardsEdit(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	out, err := yqutil.EvaluateExpression(context.Background(), edit, []byte("cpus: 4\n"))
	if err != nil {
		t.Fatalf("%s: %v", edit, err)
	}
	y, err := limayaml.Load(context.Background(), out, filepath.Join(t.TempDir(), "lima.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := y.PortForwards[0].HostSocket; got != home+"/.marina.docker.sock" {
		t.Errorf("hostSocket = %q", got)
	}
}
