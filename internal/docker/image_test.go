package docker

import (
	"slices"
	"strings"
	"testing"
)

func TestLoaded(t *testing.T) {
	got, err := loaded(strings.NewReader(`{"stream":"Loaded image: app:dev\n"}
{"stream":"Loaded image ID: sha256:0123\n"}
`))
	if err != nil || !slices.Equal(got, []string{"app:dev", "sha256:0123"}) {
		t.Errorf("%q, %v", got, err)
	}
	if _, err := loaded(strings.NewReader(`{"error":"unexpected EOF","errorDetail":{"message":"unexpected EOF"}}`)); err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("a failed load: %v", err)
	}
	if _, err := loaded(strings.NewReader(``)); err == nil {
		t.Error("a load of nothing passed")
	}
}
