package status

import (
	"context"
	"testing"

	"github.com/bcollard/marina/internal/session/sessiontest"
)

// status reads everything in one guest round trip and changes nothing.
func TestStatusIsOneRoundTrip(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.Route = &hostRoute{Dest: f.Network.Subnet, Gateway: f.Lima0.Addr(), Interface: "bridge100"}
	st, err := Get(context.Background(), f.Env)
	if err != nil {
		t.Fatal(err)
	}
	if st.Guest == nil || !st.Guest.OK || st.Route.State != "present" || st.VM.Lima0 != f.Lima0.String() {
		t.Errorf("status: %+v, guest %+v", st, st.Guest)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("status made %d guest round trips, want 1: %v", len(got), got)
	}
	if got := append(f.Called("host.privileged"), f.Called("docker.run")...); len(got) != 0 {
		t.Errorf("status changed: %v", got)
	}
}
